"""What a spec change does to a host, before it is made: two loaded projects compared, tool by tool.

A tool is added, removed or changed; for a changed tool, what changed is named by aspect (its
input schema, questions, confirm, approve, act, lock, scopes, remember, annotations, and the rest
of what ``tools/list`` shows or the tool does) down to the field, and whether its definition
digest changed: a reload that changes the digest voids the tool's calls between rounds, its
remembered approvals and its open approval requests. The digest function is handed in (the
machine layer owns it), so this module only compares specs; it runs and writes nothing.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from host.spec.model import Approve, Ask, Confirm, Project, Read, Server, Tool

__all__ = ["ASPECTS", "Change", "ProjectDiff", "ToolDiff", "Voids", "compare"]

#: A tool's aspects, in the order a diff names them. ``audit`` is the one a caller never sees.
ASPECTS = (
    "title", "description", "input schema", "output schema", "annotations", "scopes", "reads",
    "questions", "confirm", "approve", "remember", "act", "lock", "result", "order", "audit",
)  # fmt: skip
_UNSEEN = frozenset({"audit"})

Status = Literal["added", "removed", "changed"]


@dataclass(frozen=True)
class Change:
    """One field that changed: its aspect, its path inside the aspect, the old and new values.

    A value that is not there on one side (a new step, a removed key) is None there.
    """

    aspect: str
    path: str
    old: Any
    new: Any


@dataclass(frozen=True)
class Voids:
    """What a reload would void of one tool, counted in the store the host runs on."""

    remembered: int = 0
    pending: int = 0
    approved: int = 0

    @property
    def total(self) -> int:
        """Everything counted."""
        return self.remembered + self.pending + self.approved


@dataclass(frozen=True)
class ToolDiff:
    """One tool's difference.

    Attributes:
        old_digest, new_digest: The definition digests (None on the side without the tool).
        changes: Field by field, for a changed tool.
        voids: Counted in the store, when one was given and the reload voids something here.
    """

    name: str
    status: Status
    old_digest: str | None
    new_digest: str | None
    changes: tuple[Change, ...] = ()
    voids: Voids | None = None

    @property
    def aspects(self) -> list[str]:
        """The aspects that changed, in :data:`ASPECTS` order."""
        changed = {c.aspect for c in self.changes}
        return [a for a in ASPECTS if a in changed]

    @property
    def digest_changed(self) -> bool:
        """Whether a reload voids what the tool's calls and approvals hold."""
        return self.old_digest != self.new_digest

    @property
    def caller_sees(self) -> bool:
        """Whether a caller sees the difference (``audit:`` alone, they do not)."""
        return self.status != "changed" or any(c.aspect not in _UNSEEN for c in self.changes)


@dataclass(frozen=True)
class ProjectDiff:
    """Two projects compared: the server's fields, then each tool added, removed or changed."""

    old: str
    new: str
    server: tuple[Change, ...] = ()
    tools: tuple[ToolDiff, ...] = ()
    store: str | None = None
    notes: tuple[str, ...] = field(default=())

    @property
    def caller_sees(self) -> bool:
        """Whether anything a caller sees changed (exit 1 of ``host diff``)."""
        return bool(self.server) or any(t.caller_sees for t in self.tools)


def compare(
    old: Project, new: Project, digest: Callable[[Tool], str], *, old_name: str, new_name: str
) -> ProjectDiff:
    """How ``new`` differs from ``old``, tools in ``new``'s order, then the removed ones."""
    before = {t.name: t for t in old.tools}
    after = {t.name: t for t in new.tools}
    tools: list[ToolDiff] = []
    for name, tool in after.items():
        was = before.get(name)
        if was is None:
            tools.append(ToolDiff(name, "added", None, digest(tool)))
            continue
        changes = tuple(_changes(aspects(was), aspects(tool)))
        if changes:
            tools.append(ToolDiff(name, "changed", digest(was), digest(tool), changes))
    tools += [ToolDiff(n, "removed", digest(t), None) for n, t in before.items() if n not in after]
    server = tuple(_changes(_server(old.server), _server(new.server), aspect="server"))
    return ProjectDiff(old_name, new_name, server, tuple(tools))


def aspects(tool: Tool) -> dict[str, Any]:
    """A tool as plain data, by aspect: step lists keyed by step name, positions left out."""
    steps = tool.steps
    act = tool.act
    lock = None
    if act is not None and act.lock:
        lock = {"lock": list(act.lock), "lock_wait": act.lock_wait_s, "busy": _plain(act.busy)}
    return {
        "title": tool.title,
        "description": tool.description,
        "input schema": _plain(tool.input),
        "output schema": _plain(tool.output),
        "annotations": _plain(tool.annotations),
        "scopes": sorted(tool.scopes),
        "reads": _named(steps, Read),
        "questions": _named(steps, Ask),
        "confirm": _named(steps, Confirm, drop=("remember",)),
        "approve": _named(steps, Approve, drop=("remember",)),
        "remember": {
            s.name: _plain(s.remember)
            for s in steps
            if isinstance(s, Confirm | Approve) and s.remember is not None
        },
        "act": _fields(act, drop=("lock", "lock_wait_s", "busy")) if act else None,
        "lock": lock,
        "result": _plain(tool.result),
        "order": [f"{type(s).__name__.lower()}: {_step_name(s)}" for s in steps],
        "audit": sorted(tool.audit_redact),
    }


def _server(server: Server) -> dict[str, Any]:
    return {
        "name": server.name,
        "version": server.version,
        "instructions": server.instructions,
        "elicitation": server.elicitation_enabled,
        "scopes": sorted(server.scopes),
        "timeouts": _plain(server.timeouts),
    }


def _step_name(step: Any) -> str:
    return str(getattr(step, "name", None) or getattr(step, "call", ""))


def _named(steps: tuple[Any, ...], kind: type, drop: tuple[str, ...] = ()) -> dict[str, Any]:
    return {_step_name(s): _fields(s, drop) for s in steps if isinstance(s, kind)}


def _fields(step: Any, drop: tuple[str, ...] = ()) -> dict[str, Any]:
    plain = _plain(step)
    if isinstance(step, Ask):  # NOTE: a form's fields by name, so one field's change is named
        plain["fields"] = {f.pop("name"): f for f in plain["fields"]}
    return {k: v for k, v in plain.items() if k not in drop and k != "name"}


def _plain(value: Any) -> Any:
    """``value`` as plain data, every ``pos`` left out."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {
            f.name: _plain(getattr(value, f.name))
            for f in dataclasses.fields(value)
            if f.name != "pos"
        }
    if isinstance(value, Mapping):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_plain(v) for v in value]
    return value


def _changes(
    old: Mapping[str, Any], new: Mapping[str, Any], *, aspect: str | None = None
) -> Iterator[Change]:
    """Every field that differs, keyed by aspect (each top-level key, unless ``aspect``)."""
    for key in [*old, *(k for k in new if k not in old)]:
        if old.get(key) == new.get(key):
            continue
        name = aspect or key
        path = key if aspect else ""
        yield from _walk(name, path, old.get(key), new.get(key))


def _walk(aspect: str, path: str, old: Any, new: Any) -> Iterator[Change]:
    """Down mappings to the fields that differ; lists and leaves are compared whole."""
    if isinstance(old, Mapping) and isinstance(new, Mapping):
        for key in [*old, *(k for k in new if k not in old)]:
            if old.get(key) != new.get(key):
                inner = f"{path}.{key}" if path else str(key)
                yield from _walk(aspect, inner, old.get(key), new.get(key))
        return
    yield Change(aspect, path, old, new)
