"""A round's ``ctx.approvals``: the store's remembered yeses, bound to one caller and one tool.

The machine asks for an approval by question and key only; who asks and in which tool is fixed
here, by the core, so a handler or a spec can never reach another caller's approvals. A store that
fails never skips a question: a lookup that fails reads "not remembered" (the user is asked), and
a yes that cannot be kept is logged and the call goes on.
"""

from __future__ import annotations

import logging

from host.errors import StoreError
from host.store import Store
from host.store.records import approval_id

__all__ = ["StoreApprovals"]

log = logging.getLogger("host.protocol")


class StoreApprovals:
    """The approvals of ``principal`` in ``tool``, kept in ``store``.

    Args:
        store: The shared store.
        principal: Who calls.
        tool: The tool called.
    """

    __slots__ = ("principal", "store", "tool")

    def __init__(self, store: Store, principal: str, tool: str) -> None:
        self.store = store
        self.principal = principal
        self.tool = tool

    def remembered(self, question: str, key: str) -> bool:
        """Whether this caller's yes to ``question`` about ``key`` is remembered now."""
        try:
            found = self.store.find_approval(approval_id(self.principal, self.tool, question, key))
        except StoreError as exc:
            self._failed("read", question, exc)
            return False
        return found is not None

    def remember(self, question: str, key: str, for_s: float) -> None:
        """Keep this caller's yes to ``question`` about ``key`` for ``for_s`` seconds."""
        try:
            self.store.grant_approval(self.principal, self.tool, question, key, for_s)
        except StoreError as exc:
            self._failed("keep", question, exc)

    def _failed(self, doing: str, question: str, exc: StoreError) -> None:
        log.warning(
            "could not %s a remembered approval: %s",
            doing,
            exc.message,
            extra={"event": "approval_failed", "tool": self.tool, "question": question},
        )
