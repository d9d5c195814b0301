"""The digest of a tool's definition: what binds approval requests to the tool as it was.

A request made under one definition must not let a changed tool act after a reload, so every
request carries this digest and a tool whose digest differs no longer honours it.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import asdict
from typing import TYPE_CHECKING, Any

from host.spec.model import Tool

if TYPE_CHECKING:
    from host.machine.run import Machine

__all__ = ["definition_digest", "definition_text"]


def definition_text(tool: Tool) -> str:
    """The parts of ``tool`` that decide what a call does (its input, its steps), as JSON.

    NOTE: positions are left out, so moving a tool within its file changes nothing.
    """
    steps = [{"kind": type(step).__name__, **_without_pos(asdict(step))} for step in tool.steps]
    data = {"name": tool.name, "input": tool.input, "steps": steps, "scopes": tool.scopes}
    return json.dumps(data, sort_keys=True, ensure_ascii=False, default=str)


def definition_digest(machine: Machine) -> str:
    """A short digest of the machine's definition (:func:`definition_text`)."""
    raw = hashlib.sha256(machine.definition.encode("utf-8")).hexdigest()
    return raw[:32]


def _without_pos(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _without_pos(v) for k, v in value.items() if k != "pos"}
    if isinstance(value, list | tuple):
        return [_without_pos(v) for v in value]
    return value
