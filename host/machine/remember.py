"""Confirms that remember a yes: the approval's key, and what a remembered yes binds in scope.

A ``confirm`` with ``remember: {for, key}`` looks its approval up (``ctx.approvals``) when the
call has no answer to it yet; while one is remembered the confirm is not asked, and it binds what
a ticked box binds, with ``NAME.remembered`` true. A yes the user gives is kept only when the call
goes on to its act: a call that ends at a later question, or is declined, keeps nothing. Every
confirm a call goes past, asked or remembered, is reported with its outcome (for the audit trail).
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from host.jsonvalues import encoder
from host.machine.keys import KeyFunction
from host.machine.types import Approved, CallContext

__all__ = ["Approving", "Remember", "arguments_key"]

_SORTED = encoder(sort_keys=True, default=str)


def arguments_key(arguments: Mapping[str, Any]) -> str:
    """The default key of an approval: a digest of the call's arguments (defaults filled in)."""
    text = _SORTED(arguments)
    return "args:" + hashlib.sha256(text.encode("utf-8")).hexdigest()[:24]


@dataclass(frozen=True)
class Remember:
    """A compiled ``remember:``: how long a yes lasts, and how its key is made (None: the digest
    of the arguments; see :mod:`host.machine.keys`)."""

    for_s: float
    key: KeyFunction | None = None

    def key_for(self, scope: Mapping[str, Any], arguments: Mapping[str, Any]) -> str:
        """The approval's key in this call, as the confirm reads now."""
        if self.key is None:
            return arguments_key(arguments)
        return self.key(scope)


class Approving:
    """The confirms one run goes past, and the yeses it keeps once it reaches its act.

    Args:
        ctx: The call context: its ``approvals`` find and keep yeses.
        inputs: The call's inputs (defaults filled in), for default keys.
    """

    __slots__ = ("_ctx", "_inputs", "_passed")

    def __init__(self, ctx: CallContext, inputs: Mapping[str, Any]) -> None:
        self._ctx = ctx
        self._inputs = inputs
        self._passed: list[tuple[Approved, float]] = []

    def key(self, remember: Remember | None, scope: Mapping[str, Any]) -> str | None:
        """The approval key of a confirm that remembers, as it reads now; None for any other."""
        return None if remember is None else remember.key_for(scope, self._inputs)

    def remembered(
        self, name: str, remember: Remember | None, key: str | None, scope: dict[str, Any]
    ) -> bool:
        """Whether a yes to ``name`` is remembered; if so it is bound into ``scope`` as a tick.

        Always False for a question that does not remember (``remember`` or ``key`` None).
        """
        if remember is None or key is None or not self._ctx.approvals.remembered(name, key):
            return False
        scope["confirm"] = True
        scope[name] = {"action": "accept", "content": {"confirm": True}, "remembered": True}
        self._passed.append((Approved(name, True, key), remember.for_s))
        return True

    def ticked(self, name: str, remember: Remember | None, key: str | None) -> None:
        """The user ticked the confirm ``name`` in this call."""
        self._passed.append((Approved(name, False, key), remember.for_s if remember else 0.0))

    def passed(
        self, name: str, remember: Remember | None, key: str | None, *, remembered: bool
    ) -> None:
        """An approve step went past: approved now, or remembered from an earlier approval."""
        self._passed.append((Approved(name, remembered, key), remember.for_s if remember else 0.0))

    def keep(self) -> tuple[Approved, ...]:
        """Keep the yeses given in this call to confirms that remember (the act comes next);
        the confirms passed (:attr:`used`)."""
        if not self._passed:
            return ()
        for given, for_s in self._passed:
            if not given.remembered and given.key is not None:
                self._ctx.approvals.remember(given.question, given.key, for_s)
        return self.used

    @property
    def used(self) -> tuple[Approved, ...]:
        """The confirms passed so far, in order."""
        return tuple(given for given, _ in self._passed)
