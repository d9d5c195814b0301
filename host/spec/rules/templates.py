"""Templates: valid Jinja, and only names in scope at their step.

Checked: ``missing``, ``message``, ``when`` (a bare expression), every string inside a RESULT
(``declined``/``cancelled``/``unticked``, and an approve's ``rejected``/``expired``, which may
also use the question's own name, as in ``{{ pick.action }}``; and a read-only tool's
``result:``), template-valued ``enum`` options, and an act's ``lock:`` names and ``busy:``
result (names in scope at the act).
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import replace
from typing import Any

from jinja2 import TemplateSyntaxError

from host.spec.build import ToolDoc
from host.spec.diagnostics import Diagnostic
from host.spec.memo import memo
from host.spec.model import Act, Approve, Ask, Confirm, Read
from host.spec.rulebook import did_you_mean, error, one_of
from host.spec.rules.facts import ToolFacts
from host.spec.scope import CALLER, Name, Scopes, maybe_fix, maybe_reason
from host.spec.template_facts import guarded_names, jinja_hint, unknown_callables
from host.spec.templates import ENV, is_template, names, result_names
from host.spec.yaml import YPath

__all__ = ["check_templates", "template_sites", "used_names"]

_GLOBALS = frozenset(ENV.globals) | {CALLER}
_SIMPLE = re.compile(r"\{\{-?\s*([A-Za-z_]\w*)(?:\.[A-Za-z_]\w*)*\s*-?\}\}")
_CONSTANTS = frozenset({"true", "false", "none", "True", "False", "None"})


def template_sites(doc: ToolDoc) -> Iterator[tuple[int, YPath, str, bool, bool]]:
    """Every template of a tool: (step index, path, source, is an expression, may use own name)."""
    data = doc.data
    for index, step in enumerate(doc.tool.steps):
        raw = data["steps"][index]
        base: YPath = ("steps", index)
        if isinstance(step, Read) and step.missing is not None:
            yield index, (*base, "missing"), step.missing, False, False
        if isinstance(step, Act):
            yield from _act_sites(index, raw, base)
        if not isinstance(step, Ask | Confirm | Approve):
            continue
        yield index, (*base, "message"), step.message, False, False
        remember = raw.get("remember")
        if isinstance(remember, dict) and isinstance(remember.get("key"), str):
            yield index, (*base, "remember", "key"), remember["key"], False, False
        elif isinstance(remember, dict) and isinstance(remember.get("key"), list):
            # NOTE: a key of names reads each of them, as `{{ name }}` would.
            for i, name in enumerate(remember["key"]):
                yield index, (*base, "remember", "key", i), f"{{{{ {name} }}}}", False, False
        if step.when is not None:
            yield index, (*base, "when"), step.when, True, False
        for key in ("declined", "cancelled", "unticked", "rejected", "expired"):
            if key in raw:
                for path, text in _strings(raw[key], (*base, key)):
                    yield index, path, text, False, True
        for name, field in (raw.get("form") or {}).items():
            if isinstance(field.get("enum"), str):
                yield index, (*base, "form", name, "enum"), field["enum"], False, False
            items = field.get("items")
            if isinstance(items, dict) and isinstance(items.get("enum"), str):
                yield index, (*base, "form", name, "items", "enum"), items["enum"], False, False
    if "result" in data:
        # NOTE: a read-only tool's result is rendered after its last step, from every name.
        for path, text in _strings(data["result"], ("result",)):
            yield len(doc.tool.steps), path, text, False, True


def _act_sites(
    index: int, raw: dict[str, Any], base: YPath
) -> Iterator[tuple[int, YPath, str, bool, bool]]:
    """An act's ``lock:`` names (each read as ``{{ name }}`` would be) and its ``busy:``."""
    lock = raw.get("lock")
    for i, name in enumerate(lock if isinstance(lock, list) else ()):
        if isinstance(name, str):
            yield index, (*base, "lock", i), f"{{{{ {name} }}}}", False, False
    if "busy" in raw:
        for path, text in _strings(raw["busy"], (*base, "busy")):
            yield index, path, text, False, True


def _strings(value: Any, path: YPath) -> Iterator[tuple[YPath, str]]:
    if isinstance(value, str):
        yield path, value
    elif isinstance(value, dict):
        for key, item in value.items():
            yield from _strings(item, (*path, key))
    elif isinstance(value, list):
        for i, item in enumerate(value):
            yield from _strings(item, (*path, i))


@memo(8192)
def used_names(source: str, *, expression: bool = False, result: bool = False) -> frozenset[str]:
    """The names a template reads (cached: the same texts recur across tools).

    Raises:
        jinja2.TemplateSyntaxError: the template does not parse.
    """
    if not expression and not is_template(source):
        return frozenset()
    if not expression and "{%" not in source and "{#" not in source:
        # NOTE: a fast path for the common `{{ name }}` / `{{ name.attr }}` templates; anything
        # else (filters, tests, keywords, stray braces) goes through Jinja's parser.
        simple = _SIMPLE.findall(source)
        if simple and len(simple) == source.count("{{") and not set(simple) & _CONSTANTS:
            return frozenset(simple)
    if result:
        return frozenset(result_names(source))
    return frozenset(names(source, expression=expression))


def check_templates(facts: ToolFacts) -> list[Diagnostic]:
    """``template-syntax``, ``template-name`` and ``template-optional`` for every template."""
    doc, scopes = facts.doc, facts.scopes
    found: list[Diagnostic] = []
    locs = doc.locs
    for index, path, source, expression, own in template_sites(doc):
        if expression and ("{{" in source or "{%" in source):
            found.append(
                error(
                    locs.value(path),
                    "template-syntax",
                    "when: is a bare Jinja expression, without {{ }}: write "
                    f"when: {_bare(source)}",
                )
            )
            continue
        try:
            used = used_names(source, expression=expression, result=own)
            unknown_calls = unknown_callables(source, expression=expression)
            guarded = guarded_names(source, expression=expression)
        except TemplateSyntaxError as exc:
            hint = jinja_hint(exc, expression=expression)
            found.append(
                error(
                    locs.line(path, exc.lineno),
                    "template-syntax",
                    f"invalid Jinja: {exc.message}{hint}",
                )
            )
            continue
        found.extend(error(locs.value(path), "template-syntax", m) for m in unknown_calls)
        scope = dict(scopes.at(index))
        step = doc.tool.steps[index] if index < len(doc.tool.steps) else None
        if own and isinstance(step, Ask | Confirm | Approve):
            # NOTE: a question's own results run only once it was asked: its name is defined.
            scope[step.name] = replace(scopes.at(index + 1)[step.name], definite=True)
        site = str(path[2]) if len(path) > 2 else ""
        for name in sorted(used - set(scope) - _GLOBALS):
            message = unknown(name, scope, scopes, index, site)
            found.append(error(locs.word(path, name), "template-name", message))
        for name in sorted((used & set(scope)) - guarded - _GLOBALS):
            if not scope[name].definite:
                where = locs.word(path, name)
                message = (
                    _maybe_lock(scope[name]) if site == "lock" else _maybe(scope[name], expression)
                )
                found.append(error(where, "template-optional", message))
    return found


def _bare(source: str) -> str:
    """A ``when:`` written as a template, as the bare expression it should be."""
    inner = source.strip()
    inner = inner.removeprefix("{{").removesuffix("}}").strip()
    return inner.removeprefix("-").removesuffix("-").strip() or "agent is undefined"


def _maybe_lock(name: Name) -> str:
    """``template-optional`` for a ``lock:`` name: the lock's key needs every value."""
    return (
        f"'{name.name}' may be undefined here ({maybe_reason(name)}), and a lock's key needs "
        f"the value of each of its names; leave it out of lock:{maybe_fix(name)}"
    )


def _maybe(name: Name, expression: bool) -> str:
    """``template-optional``: a name the template trusts although it may be undefined."""
    text = name.name
    test = (
        f"write `{text} is defined and ...`"
        if expression
        else f"test it ({{% if {text} is defined %}}...{{% endif %}}) or write "
        f"{{{{ {text} | default('') }}}}"
    )
    return (
        f"'{text}' may be undefined here ({maybe_reason(name)}), and then every call that "
        f"reaches this fails with \"'{text}' is undefined\"; {test}{maybe_fix(name)}"
    )


def unknown(
    name: str, scope: dict[str, Name], scopes: Scopes, index: int | None = None, site: str = ""
) -> str:
    """The message for a name not in scope: defined only later, or not at all (with a hint).

    Args:
        index: The step the name is used at (to tell its own outputs from later steps').
        site: The key the name is used under (``when``: its own answers cannot decide it).
    """
    later = scopes.later(name)
    if later is not None and later.step is not None and later.step == index:
        return _own(name, later, site)
    if later is not None and later.step is not None:
        return (
            f"'{name}' is not defined yet here: it comes from the step at line {later.pos.line}, "
            "which runs later; move this use below that step, or use a name defined before it."
        )
    # NOTE: the host sets `caller` at every step (unless an input shadows it): it is in scope too
    names = [*scope, *([] if CALLER in scope else [CALLER])]
    listed = one_of(names)
    hint = did_you_mean(name, names) or " Use one of them, or define it in an earlier step."
    return f"'{name}' is not defined here; names in scope: {listed}.{hint}"


def _own(name: str, defined: Name, site: str) -> str:
    """A name that the step using it defines itself: it exists only after that step."""
    if defined.origin == "read":
        return (
            f"'{name}' is what this read step returns: it is not defined while its own handler "
            "or missing: text runs; use an input or an earlier step's name."
        )
    if site == "when":
        return (
            f"'{name}' is answered by this question, so it is not known when when: decides "
            f"whether to ask; to ask only when the model left it out, declare '{name}' as an "
            f"optional input and write when: {name} is undefined."
        )
    what = (
        "this question's own name" if defined.origin == "question" else "a field of this question"
    )
    return (
        f"'{name}' is {what}: it is defined only after the user answers, so this text cannot "
        f"use it; use an input or an earlier step's name."
    )
