"""Handlers: each ``module:function`` exists, and each parameter can be bound at its step.

The host passes arguments by parameter name from the names in scope. A parameter is fine when it is
``ctx``, has a default, or names something sure to be defined at that step (see
:mod:`host.spec.scope`); a name that is in scope but may be undefined (an optional input, an
optional field) needs a default.
"""

from __future__ import annotations

import re

from host.spec.diagnostics import Diagnostic
from host.spec.handlers import Handler, HandlerProblem, Param, signature_problem
from host.spec.model import Act, Read
from host.spec.rulebook import error
from host.spec.rules.facts import ToolFacts
from host.spec.rules.templates import unknown
from host.spec.scope import CALLER, Name, Scopes, maybe_fix, maybe_reason
from host.spec.vocabulary import HANDLER

__all__ = ["check_handlers"]


def check_handlers(facts: ToolFacts) -> list[Diagnostic]:
    """``handler-*`` diagnostics for every read's ``call`` and the act."""
    doc, scopes, index = facts.doc, facts.scopes, facts.handlers
    found: list[Diagnostic] = []
    for i, step in enumerate(doc.tool.steps):
        if isinstance(step, Read):
            ref, path = step.call, ("steps", i, "call")
        elif isinstance(step, Act):
            ref, path = step.call, ("steps", i, "act")
        else:
            continue
        pos = doc.locs.value(path)
        if not re.match(HANDLER, ref):
            continue  # NOTE: the schema pass reported it (handler-name)
        try:
            handler = index.resolve(ref)
        except HandlerProblem as problem:
            message = problem.message
            if problem.pos is not None:
                # NOTE: a syntax error is reported once, in the handler file, where it is.
                found.append(error(problem.pos, problem.rule, message))
                message = (
                    f"{ref} cannot be checked: {problem.pos} is not valid Python; fix that "
                    "file first"
                )
            found.append(error(pos, problem.rule, message))
            continue
        shape = signature_problem(ref, handler.params, is_async=handler.is_async)
        if shape is not None:
            found.append(error(pos, "handler-signature", f"{shape} ({handler.where})"))
            continue
        if handler.params is None:
            continue
        for param in handler.params:
            if isinstance(step, Act) and _defined_after(param.name, scopes, i):
                continue  # NOTE: the step defining it comes after the act: `order` is the cause
            problem_text = _param(param, handler, scopes.at(i), scopes, i)
            if problem_text is not None:
                found.append(error(pos, *problem_text))
    return found


def _defined_after(name: str, scopes: Scopes, index: int) -> bool:
    """Whether ``name`` is not in scope at step ``index`` but a later step defines it."""
    later = scopes.later(name)
    return (
        name not in scopes.at(index)
        and later is not None
        and later.step is not None
        and later.step > index
    )


def _param(
    param: Param, handler: Handler, scope: dict[str, Name], scopes: Scopes, index: int
) -> tuple[str, str] | None:
    if param.name == "ctx" or (param.name == CALLER and CALLER not in scope):
        return None
    where = f"{handler.ref} ({handler.where})"
    if param.has_default:
        return None
    known = scope.get(param.name)
    if known is None:
        return (
            "handler-param",
            f"{where} takes '{param.name}' at this step, but "
            f"{unknown(param.name, scope, scopes, index)} Or give the parameter a default.",
        )
    if not known.definite:
        return (
            "handler-optional",
            f"{where} needs '{param.name}', but here it may be undefined "
            f"({maybe_reason(known)}): give the parameter a default ({param.name}=None)"
            f"{maybe_fix(known)}",
        )
    return None
