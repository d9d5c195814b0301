"""A round's ``ctx.approvals``: the store's remembered yeses, bound to one caller and one tool.

The machine asks for an approval by question and key only; who asks and in which tool is fixed
here, by the core, so a handler or a spec can never reach another caller's approvals. A store that
fails never skips a question: a lookup that fails reads "not remembered" (the user is asked), and
a yes that cannot be kept is logged and the call goes on.

A yes is also bound to the definition of the tool it was given under: beside the approval, the
store keeps the tool's definition digest under the approval's id (with the same lifetime), and a
yes given to another definition (a reload changed the questions, the act or the input) no longer
counts. Every yes is kept here, the test kit's seeded ones too, so a yes without its digest (or
whose digest names another grant of it) was not kept this way: it never counts, since nothing
says which definition it was given under.
"""

from __future__ import annotations

import json
import logging

from host.errors import StoreError
from host.store import Store
from host.store.records import Approval, approval_id

__all__ = ["StoreApprovals", "definition_key", "kept_definition"]

log = logging.getLogger("host.protocol")

_DEFINITION = "approval-definition:"
#: Grants further apart than this are two grants (a store keeps times to the microsecond).
_SAME_GRANT_S = 0.01


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
            found = self.store.find_approval(approval)
            if found is None:
                return False
            kept = self.store.get(_DEFINITION + approval)
        except StoreError as exc:
            self._failed("read", question, exc)
            return False
        return kept_definition(found, kept) == self.definition

    def remember(self, question: str, key: str, for_s: float) -> None:
        """Keep this caller's yes to ``question`` about ``key`` for ``for_s`` seconds."""
        self.keep(question, key, for_s)

    def keep(self, question: str, key: str, for_s: float) -> Approval | None:
        """:meth:`remember`, saying what was kept: None when the store refused (logged)."""
        try:
            kept = self.store.grant_approval(self.principal, self.tool, question, key, for_s)
            given = json.dumps([self.definition, kept.granted])
            self.store.put(_DEFINITION + kept.id, given, for_s)
        except StoreError as exc:
            self._failed("keep", question, exc)
            return None
        return kept

    def _failed(self, doing: str, question: str, exc: StoreError) -> None:
        log.warning(
            "could not %s a remembered approval: %s",
            doing,
            exc.message,
            extra={"event": "approval_failed", "tool": self.tool, "question": question},
        )


def kept_definition(approval: Approval, kept: str | None) -> str | None:
    """The definition digest ``approval`` was kept under, from what the store holds beside it
    (``store.get("approval-definition:" + id)``); None when it counts under none.

    NOTE: no digest (or an unreadable one, or one kept with another grant of it): nothing says
    which definition it was given under, so it counts under none, before a reload or after.
    """
    if kept is None:
        return None
    try:
        definition, granted = json.loads(kept)
    except (ValueError, TypeError):
        return None
    try:
        regranted = abs(float(granted) - approval.granted) > _SAME_GRANT_S
    except (ValueError, TypeError):
        return None
    return None if regranted or not isinstance(definition, str) else definition


def definition_key(approval: Approval) -> str:
    """Where the store keeps the digest of the definition ``approval`` was given under."""
    return _DEFINITION + approval.id
