"""A round's ``ctx.approvals``: the store's remembered yeses, bound to one caller and one tool.

The machine asks for an approval by question and key only; who asks and in which tool is fixed
here, by the core, so a handler or a spec can never reach another caller's approvals. A store that
fails never skips a question: a lookup that fails reads "not remembered" (the user is asked), and
a yes that cannot be kept is logged and the call goes on.

A yes is also bound to the definition of the tool it was given under: beside the approval, the
store keeps the tool's definition digest under the approval's id (with the same lifetime), and a
yes given to another definition (a reload changed the questions, the act or the input) no longer
counts. An approval granted without one (by an operator, or by the testing kit) counts for the
tool as it is.
"""

from __future__ import annotations

import logging

from host.errors import StoreError
from host.store.base import Store
from host.store.records import approval_id

__all__ = ["StoreApprovals"]

log = logging.getLogger("host.protocol")

_DEFINITION = "approval-definition:"


class StoreApprovals:
    """The approvals of ``principal`` in ``tool``, kept in ``store``.

    Args:
        store: The shared store.
        principal: Who calls.
        tool: The tool called.
        definition: The digest of the tool's definition now.
    """

    __slots__ = ("definition", "principal", "store", "tool")

    def __init__(self, store: Store, principal: str, tool: str, definition: str = "") -> None:
        self.store = store
        self.principal = principal
        self.tool = tool
        self.definition = definition

    def remembered(self, question: str, key: str) -> bool:
        """Whether this caller's yes to ``question`` about ``key`` is remembered now."""
        approval = approval_id(self.principal, self.tool, question, key)
        try:
            if self.store.find_approval(approval) is None:
                return False
            given_to = self.store.get(_DEFINITION + approval)
        except StoreError as exc:
            self._failed("read", question, exc)
            return False
        return given_to is None or given_to == self.definition

    def remember(self, question: str, key: str, for_s: float) -> None:
        """Keep this caller's yes to ``question`` about ``key`` for ``for_s`` seconds."""
        try:
            kept = self.store.grant_approval(self.principal, self.tool, question, key, for_s)
            self.store.put(_DEFINITION + kept.id, self.definition, for_s)
        except StoreError as exc:
            self._failed("keep", question, exc)

    def _failed(self, doing: str, question: str, exc: StoreError) -> None:
        log.warning(
            "could not %s a remembered approval: %s",
            doing,
            exc.message,
            extra={"event": "approval_failed", "tool": self.tool, "question": question},
        )
