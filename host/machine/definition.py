"""A tool's definition digest: what it means, so a call begun under one never acts under another.

Every record a call leaves between rounds (the sealed ``requestState``, a legacy question, a
fallback record, a remembered yes) carries this digest; after a reload that changed the tool, the
record no longer matches the tool it names. The digest is of what the tool does and asks: its
input schema, its steps in order (reads, questions with their messages, forms, conditions and
endings, the act), a read-only tool's ``result:``, and the handlers they call by name. Where a
step stands in its file and the file's comments are not part of it, so moving a tool or
commenting it changes nothing.
"""

from __future__ import annotations

import base64
import dataclasses
import hashlib
import json
from typing import Any

from host.spec.model import Tool

__all__ = ["definition_digest"]


def definition_digest(tool: Tool) -> str:
    """The digest of ``tool``'s definition: 128 bits, URL-safe Base64."""
    meaning = {
        "name": tool.name,
        "input": tool.input,
        "steps": [_meaning(step) for step in tool.steps],
        "result": _meaning(tool.result),
    }
    text = json.dumps(
        meaning, sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=str
    )
    raw = hashlib.sha256(text.encode("utf-8")).digest()[:16]
    return base64.urlsafe_b64encode(raw).rstrip(b"=").decode("ascii")


#: Fields the language gained later, left out at their defaults: a tool that does not use them
#: keeps the digest it had, so an upgrade does not end the calls in flight as "changed".
_LATER = {"mode": "form", "wait_s": 30.0, "secret": False}


def _meaning(value: Any) -> Any:
    """``value`` as plain data, every ``pos`` left out; a step keeps its kind's name."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        fields = {
            f.name: _meaning(getattr(value, f.name))
            for f in dataclasses.fields(value)
            if f.name != "pos"
            and not (f.name in _LATER and getattr(value, f.name) == _LATER[f.name])
        }
        return {"kind": type(value).__name__, **fields}
    if isinstance(value, dict):
        return {str(k): _meaning(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_meaning(v) for v in value]
    return value
