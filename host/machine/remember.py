"""Confirms that remember a yes: the approval's key, and what a remembered yes binds in scope.

A ``confirm`` with ``remember: {for, key}`` looks its approval up (``ctx.approvals``) when the
call has no answer to it yet; while one is remembered the confirm is not asked, and it binds what
a ticked box binds, with ``NAME.remembered`` true. A yes the user gives is kept only when the call
goes on to its act: a call that ends at a later question, or is declined, keeps nothing.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from host.machine.types import Approved, CallContext
from host.spec.templates import Renderer

__all__ = ["Remember", "arguments_key", "remembered"]


def arguments_key(arguments: Mapping[str, Any]) -> str:
    """The default key of an approval: a digest of the call's arguments (defaults filled in)."""
    text = json.dumps(arguments, sort_keys=True, ensure_ascii=False, default=str)
    return "args:" + hashlib.sha256(text.encode("utf-8")).hexdigest()[:24]


@dataclass(frozen=True)
class Remember:
    """A compiled ``remember:``: how long a yes lasts, and its key's template (None: the digest
    of the arguments)."""

    for_s: float
    key: Renderer | None = None

    def key_for(self, scope: Mapping[str, Any], arguments: Mapping[str, Any]) -> str:
        """The approval's key in this call, as the confirm reads now."""
        if self.key is None:
            return arguments_key(arguments)
        return str(self.key(scope))


def remembered(name: str, key: str, scope: dict[str, Any], ctx: CallContext) -> Approved | None:
    """Bind a remembered yes to ``name`` into ``scope`` and say so; None when there is none."""
    if not ctx.approvals.remembered(name, key):
        return None
    scope["confirm"] = True
    scope[name] = {"action": "accept", "content": {"confirm": True}, "remembered": True}
    return Approved(name, True, key)
