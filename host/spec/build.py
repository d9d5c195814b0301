"""Build the typed model from documents that passed the schema pass.

The builder trusts the shape (the schema pass checked it) and only translates: positions from the
document's :class:`~host.spec.yaml.Locs`, implied defaults (``type: object``) made explicit.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from host.spec.durations import DurationError, parse_duration
from host.spec.model import (
    Act,
    Approve,
    Ask,
    Confirm,
    Example,
    FormField,
    Pos,
    Read,
    Remember,
    Server,
    Step,
    Timeouts,
    Tool,
)
from host.spec.yaml import Document, Locs

__all__ = ["ToolDoc", "build_server", "build_tool", "is_zero", "seconds"]

_ZERO = re.compile(r"^\s*0+(?:\.0+)?(?:ms|s|m|h|d)\s*$")


@dataclass(frozen=True)
class ToolDoc:
    """A built tool with the positions of everything written in its document."""

    tool: Tool
    locs: Locs
    data: dict[str, Any]


def build_server(doc: Document) -> Server:
    """The ``kind: server`` document as a :class:`Server` (missing keys take the defaults)."""
    data: dict[str, Any] = doc.data
    defaults = Server()
    elicitation = data.get("elicitation") or {}
    timeouts = data.get("timeouts") or {}
    return Server(
        name=data.get("name", defaults.name),
        version=data.get("version", defaults.version),
        instructions=data.get("instructions"),
        elicitation_enabled=elicitation.get("enabled") is True,
        pos=doc.locs.value(()),
        elicitation_switched_off=elicitation.get("enabled") is False,
        fallback_enabled=elicitation.get("fallback") is not False,
        scopes=tuple(data.get("scopes") or ()),
        timeouts=Timeouts(seconds(timeouts.get("read")), seconds(timeouts.get("act"))),
    )


def seconds(value: Any) -> float | None:
    """A written duration in seconds; None when absent or unreadable (a rule reports it)."""
    if value is None:
        return None
    try:
        return parse_duration(value)
    except DurationError:
        return None


def is_zero(value: Any) -> bool:
    """Whether a written duration is zero (``0s``): allowed where waiting is optional."""
    return isinstance(value, str) and _ZERO.match(value) is not None


def build_tool(doc: Document) -> ToolDoc:
    """The ``kind: tool`` document as a :class:`Tool`, with its positions."""
    data: dict[str, Any] = doc.data
    locs = doc.locs
    steps = tuple(_step(step, ("steps", i), locs) for i, step in enumerate(data["steps"]))
    output = data.get("output")
    annotations = dict(data.get("annotations") or {})
    if not any("act" in step for step in data["steps"] if isinstance(step, dict)):
        # NOTE: a tool without an act changes nothing, so it says so unless it says otherwise.
        annotations.setdefault("readOnlyHint", True)
    tool = Tool(
        name=data["name"],
        description=data["description"],
        input=_object_schema(data.get("input")),
        steps=steps,
        title=data.get("title"),
        annotations=annotations,
        output=None if output is None else _object_schema(output),
        examples=tuple(
            _example(item, locs.value(("examples", i)))
            for i, item in enumerate(data.get("examples") or [])
        ),
        pos=locs.key(("name",)),
        scopes=tuple(data.get("scopes") or ()),
        audit_redact=tuple((data.get("audit") or {}).get("redact") or ()),
        result=data.get("result"),
        task=data.get("task"),
    )
    return ToolDoc(tool, locs, data)


def _object_schema(schema: dict[str, Any] | None) -> dict[str, Any]:
    # NOTE: MCP requires inputSchema (and outputSchema) to be `type: object`; writing it in
    # every spec is noise, so it is implied. Another type is a `schema-type` error, kept as is.
    result = dict(schema or {})
    result.setdefault("type", "object")
    return result


def _step(step: dict[str, Any], path: tuple[str | int, ...], locs: Locs) -> Step:
    pos = locs.value(path)
    if "read" in step:
        return Read(
            step["read"], step["call"], step.get("missing"), pos, seconds(step.get("timeout"))
        )
    if "ask" in step:
        fields = tuple(
            _field(name, schema, locs.key((*path, "form", name)))
            for name, schema in step["form"].items()
        )
        return Ask(
            name=step["ask"],
            message=step["message"],
            fields=fields,
            when=step.get("when"),
            declined=step.get("declined"),
            cancelled=step.get("cancelled"),
            pos=pos,
            mode="url" if step.get("mode") == "url" else "form",
            wait_s=_wait(step.get("wait"), 30.0),
        )
    if "confirm" in step:
        return Confirm(
            name=step["confirm"],
            message=step["message"],
            label=step.get("label"),
            when=step.get("when"),
            declined=step.get("declined"),
            cancelled=step.get("cancelled"),
            unticked=step.get("unticked"),
            pos=pos,
            remember=_remember(step.get("remember"), locs.value((*path, "remember"))),
        )
    if "approve" in step:
        return _approve(step, path, locs)
    lock = step.get("lock")
    return Act(
        step["act"],
        pos,
        step.get("returns", "value"),
        seconds(step.get("timeout")),
        lock=tuple(lock) if isinstance(lock, list) else (),
        lock_wait_s=seconds(step.get("lock_wait")) or 0.0,
        busy=step.get("busy"),
    )


def _wait(written: Any, default: float) -> float:
    """A step's ``wait:`` in seconds (``0s`` is no wait), or ``default`` when not written."""
    wait = 0.0 if is_zero(written) else seconds(written)
    return default if wait is None else wait


def _approve(step: dict[str, Any], path: tuple[str | int, ...], locs: Locs) -> Approve:
    expires = seconds(step.get("expires"))
    return Approve(
        name=step["approve"],
        message=step["message"],
        approvers=tuple(step["approvers"]),
        count=int(step.get("count", 1)),
        wait_s=_wait(step.get("wait"), 60.0),
        expires_s=3600.0 if expires is None else expires,
        when=step.get("when"),
        rejected=step.get("rejected"),
        expired=step.get("expired"),
        pos=locs.value(path),
        remember=_remember(step.get("remember"), locs.value((*path, "remember"))),
    )


def _remember(written: dict[str, Any] | None, pos: Pos) -> Remember | None:
    if written is None:
        return None
    # NOTE: an unreadable `for` is reported by the duration rule; 0 keeps the model whole.
    key = written.get("key")
    return Remember(
        seconds(written.get("for")) or 0.0, tuple(key) if isinstance(key, list) else key, pos
    )


def _field(name: str, schema: dict[str, Any], pos: Any) -> FormField:
    optional = schema.get("optional") is True
    clean = {k: v for k, v in schema.items() if k not in ("optional", "secret")}
    required = not optional and "default" not in schema
    return FormField(name, clean, required, pos, secret=schema.get("secret") is True)


def _example(item: dict[str, Any], pos: Any) -> Example:
    return Example(
        name=item["name"],
        arguments=dict(item.get("arguments") or {}),
        answers={k: dict(v) for k, v in (item.get("answers") or {}).items()},
        expect=dict(item.get("expect") or {}),
        approvals={k: dict(v) for k, v in (item.get("approvals") or {}).items()},
        pos=pos,
    )
