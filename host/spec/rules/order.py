"""Order and names: at most one act, last, after every question; approvals after the caller's
questions; every name defined once.

"Questions before side effects" is structural: a tool has at most one ``act``, nothing comes
after it, and no ``read`` (which runs on every round, before the user has answered) calls the
act's handler. A tool without an act is read-only: its result is its ``result:`` or the value of
its last read, so it needs one of them.
"""

from __future__ import annotations

from host.spec.build import ToolDoc
from host.spec.diagnostics import Diagnostic
from host.spec.model import Act, Approve, Ask, Confirm, Pos, Read
from host.spec.rulebook import error
from host.spec.rules.facts import ToolFacts

__all__ = ["check_names", "check_order"]


def _kind(step: object) -> str:
    return type(step).__name__.lower()


def check_order(facts: ToolFacts) -> list[Diagnostic]:
    """``act-count``, ``order`` and ``read-side-effect``."""
    doc = facts.doc
    tool, locs = doc.tool, doc.locs
    found: list[Diagnostic] = _approve_order(tool.steps)
    acts = [(i, s) for i, s in enumerate(tool.steps) if isinstance(s, Act)]
    if not acts:
        return _read_only(doc)
    if "result" in doc.data:
        found.append(
            error(
                locs.key(("result",)),
                "act-count",
                f"tool '{tool.name}' has an act (line {acts[0][1].pos.line}) and a result:, "
                "which only a read-only tool has (the act's return value is the result): "
                "remove result:, or remove the act if the tool only reads",
            )
        )
    first_index, first = acts[0]
    for _, extra in acts[1:]:
        found.append(
            error(
                extra.pos,
                "act-count",
                f"a second act (the first is at line {first.pos.line}); a tool has exactly one "
                "act: remove one, or make it a read if it only reads",
            )
        )
    for step in tool.steps[first_index + 1 :]:
        if isinstance(step, Ask | Confirm | Approve):
            found.append(
                error(
                    step.pos,
                    "order",
                    f"the {_kind(step)} step '{step.name}' comes after the act (line "
                    f"{first.pos.line}): questions must come before side effects; move it "
                    "above the act",
                )
            )
        elif isinstance(step, Read):
            found.append(
                error(
                    step.pos,
                    "order",
                    f"the read step '{step.name}' comes after the act (line {first.pos.line}); "
                    "the act is the last step: move the read above it",
                )
            )
    for index, step in enumerate(tool.steps):
        if isinstance(step, Read) and step.call == first.call:
            found.append(
                error(
                    locs.value(("steps", index, "call")),
                    "read-side-effect",
                    f"the read step '{step.name}' calls {step.call}, the act's handler: reads "
                    "run on every round, before the user has answered, and questions must come "
                    "before side effects; call a read-only function here",
                )
            )
    return found


def _read_only(doc: ToolDoc) -> list[Diagnostic]:
    """A tool without an act returns its ``result:`` or its last read: it needs one of them."""
    tool = doc.tool
    if "result" in doc.data or any(isinstance(s, Read) for s in tool.steps):
        return []
    return [
        error(
            doc.locs.key(("steps",)),
            "act-count",
            f"tool '{tool.name}' has no act step and nothing to return: add '- act: "
            "module:function' as its last step, or (a read-only tool) a read step, whose value "
            "is the result, or a result: beside steps",
        )
    ]


def _approve_order(steps: tuple[object, ...]) -> list[Diagnostic]:
    """An ``approve`` before an ``ask`` or ``confirm``: approvers decide on the whole request."""
    found: list[Diagnostic] = []
    for index, step in enumerate(steps):
        if not isinstance(step, Approve):
            continue
        for later in steps[index + 1 :]:
            if isinstance(later, Ask | Confirm):
                found.append(
                    error(
                        step.pos,
                        "order",
                        f"the approve step '{step.name}' comes before the {_kind(later)} "
                        f"'{later.name}' (line {later.pos.line}): approvers decide on the whole "
                        "request, arguments and answers; move the approve below every ask and "
                        "confirm, just above the act",
                    )
                )
                break
    return found


def check_names(facts: ToolFacts) -> list[Diagnostic]:
    """``duplicate-step`` and ``name-clash``: every name in a tool means one thing."""
    doc = facts.doc
    tool, locs = doc.tool, doc.locs
    found: list[Diagnostic] = []
    inputs: dict[str, Pos] = {}
    properties = tool.input.get("properties")
    if isinstance(properties, dict):
        for name in properties:
            inputs[name] = locs.key(("input", "properties", name))
            if name == "ctx":
                found.append(_reserved(inputs[name], "input field"))
    steps: dict[str, Pos] = {}
    fields: dict[str, tuple[Pos, str]] = {}
    for index, step in enumerate(tool.steps):
        if isinstance(step, Act):
            continue
        kind = _kind(step)
        pos = locs.value(("steps", index, kind))
        if step.name == "ctx":
            found.append(_reserved(pos, "step name"))
        elif step.name in steps:
            found.append(
                error(
                    pos,
                    "duplicate-step",
                    f"step name '{step.name}' is already used by the step at line "
                    f"{steps[step.name].line}; rename one of them",
                )
            )
        elif step.name in inputs:
            found.append(
                _clash(pos, f"step name '{step.name}'", "an input field", inputs[step.name])
            )
        elif step.name in fields:
            where, owner = fields[step.name]
            found.append(_clash(pos, f"step name '{step.name}'", f"a field of {owner}", where))
        steps.setdefault(step.name, pos)
        if not isinstance(step, Ask):
            continue
        for field in step.fields:
            what = f"form field '{field.name}'"
            if field.name == "ctx":
                found.append(_reserved(field.pos, "form field"))
            elif field.name in steps:
                found.append(_clash(field.pos, what, "a step name", steps[field.name]))
            elif field.name in fields:
                where, owner = fields[field.name]
                found.append(_clash(field.pos, what, f"a field of {owner}", where))
            fields.setdefault(field.name, (field.pos, f"ask '{step.name}'"))
    return found


def _clash(pos: Pos, what: str, other: str, where: Pos) -> Diagnostic:
    return error(
        pos,
        "name-clash",
        f"{what} is already {other} (line {where.line}); rename it so each name means one thing",
    )


def _reserved(pos: Pos, what: str) -> Diagnostic:
    return error(
        pos,
        "name-clash",
        f"'ctx' cannot be a {what}: handlers receive the call context as ctx; rename it",
    )
