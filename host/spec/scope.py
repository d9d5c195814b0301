"""Which names are in scope at each step of a tool, and which are sure to be defined there.

Names come from input fields, earlier reads, earlier answer fields and earlier question names
(and ``caller``, the principal, which the host sets at every step: see :data:`CALLER`).
A name is *definite* when every run that reaches the step has it:

- a required input, or an optional one whose schema has a ``default`` (the host fills it in);
- a read (its value may be None, but it is bound);
- a question's name and its required fields (or fields with a ``default``) after a question without
  ``when:`` (a declined or cancelled question stops the call, so later steps only run after accept);
- an optional input that an ask fills under ``when: NAME is undefined`` (or ``is not defined``)
  with a required field of the same name: either the model passed it, or the user was asked.

Everything else (optional inputs, optional fields, the fields of a question with another ``when``)
is in scope but *maybe* undefined: templates may test it (``is defined``), handlers need a default.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Literal

from host.spec.model import Approve, Ask, Confirm, Pos, Read, Tool
from host.spec.yaml import Locs

__all__ = ["CALLER", "Name", "Scopes", "fills", "maybe_fix", "maybe_reason", "scopes"]

Origin = Literal["input", "read", "field", "question"]

#: The caller's principal: the host puts it in scope at every step, so it is no entry here
#: (templates and handlers may read it wherever an input of that name does not shadow it).
CALLER = "caller"
_GUARD = re.compile(r"^\s*([A-Za-z_]\w*)\s+is\s+(?:undefined|not\s+defined)\s*$")


@dataclass(frozen=True)
class Name:
    """One name in scope: where it comes from and whether it is sure to be defined."""

    name: str
    origin: Origin
    definite: bool
    pos: Pos
    step: int | None = None


@dataclass(frozen=True)
class Scopes:
    """``before[i]``: the names in scope before step ``i``; ``before[-1]``: after the last step."""

    before: list[dict[str, Name]]

    def at(self, index: int) -> dict[str, Name]:
        """The names in scope when step ``index`` runs."""
        return self.before[index]

    def later(self, name: str) -> Name | None:
        """Where ``name`` gets defined at all (for 'only defined after step ...' messages)."""
        return self.before[-1].get(name)


_MAYBE = {
    "input": "an optional input",
    "field": "a field that may be left empty or is asked only under a when:",
    "question": "a question asked only under a when:",
    "read": "a read",
}
_FIX = {
    "input": ", make the input required, or ask for it under `when: {name} is undefined`",
    "field": " or make the field required (no `optional: true`, no `when:`)",
}


def maybe_reason(name: Name) -> str:
    """Why ``name`` may be undefined, in a few words (``an optional input``)."""
    return _MAYBE[name.origin]


def maybe_fix(name: Name) -> str:
    """The other ways to make ``name`` sure to be defined, as a clause starting with a comma."""
    return _FIX.get(name.origin, "").format(name=name.name)


def fills(when: str | None) -> str | None:
    """The name a ``when: NAME is undefined`` guard tests, else None."""
    match = _GUARD.match(when or "")
    return match[1] if match else None


def scopes(tool: Tool, locs: Locs) -> Scopes:
    """The names in scope before every step of ``tool``."""
    current: dict[str, Name] = {}
    properties = tool.input.get("properties")
    required = tool.input.get("required")
    wanted = {r for r in required if isinstance(r, str)} if isinstance(required, list) else set()
    if isinstance(properties, dict):
        for name, schema in properties.items():
            pos = locs.key(("input", "properties", name))
            filled = isinstance(schema, dict) and "default" in schema
            current[name] = Name(name, "input", name in wanted or filled, pos)
    before: list[dict[str, Name]] = []
    for index, step in enumerate(tool.steps):
        before.append(dict(current))
        if isinstance(step, Read):
            current[step.name] = Name(step.name, "read", True, step.pos, index)
        elif isinstance(step, Ask | Confirm | Approve):
            current[step.name] = Name(step.name, "question", step.when is None, step.pos, index)
        if isinstance(step, Ask):
            guard = fills(step.when)
            for field in step.fields:
                answered = field.required or "default" in field.schema
                definite = answered and (step.when is None or field.name == guard)
                old = current.get(field.name)
                if old is not None and old.definite:
                    definite = True
                current[field.name] = Name(field.name, "field", definite, field.pos, index)
    before.append(dict(current))
    return Scopes(before)
