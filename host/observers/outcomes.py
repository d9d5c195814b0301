"""What became of an approved call, kept on its approval request for the people who decided it.

An observer of the rounds, as the audit trail is: the round that ends a call which spent an
approval writes the call's outcome onto the request (``acted``, ``failed``, ``busy`` or
``cancelled``), so the request's page, the API and History can say whether the act ran. Until
then an approved request reads ``running``; rejected, expired and voided ones say so themselves
(:meth:`host.approvals.inbox.InboxRequest.outcome`).
"""

from __future__ import annotations

from typing import Any

from host.observers.audit import outcome_of
from host.protocol.events import Round
from host.store import Store
from host.store.requests import ApprovalRequest

__all__ = ["OUTCOMES", "RequestOutcomes", "call_outcome"]

OUTCOMES = ("acted", "failed", "busy", "expired", "rejected", "cancelled", "running")
"""Every outcome a decided request can read, as the API's ``outcome`` says it."""


def call_outcome(audit_outcome: str) -> str:
    """The request's outcome for a call that ended with ``audit_outcome`` (the audit's word)."""
    if audit_outcome in ("acted", "read"):
        return "acted"
    if audit_outcome in ("busy", "cancelled"):
        return audit_outcome
    return "failed"  # NOTE: a tool error, an incident (an outcome unknown), any refusal


class RequestOutcomes:
    """Writes each approved call's outcome onto its request (one store write per such call).

    Args:
        store: The shared store.
    """

    def __init__(self, store: Store) -> None:
        self.store = store

    def round_ended(self, event: Round) -> None:
        """Note the outcome of a call that ended after spending its approval."""
        if not event.ends or event.approval is None or event.approval.status != "approved":
            return
        outcome = call_outcome(outcome_of(event))

        def note(current: ApprovalRequest) -> ApprovalRequest | None:
            extra: dict[str, Any] = dict(current.extra)
            if extra.get("outcome") == outcome:
                return None
            extra["outcome"] = outcome
            return current.changed(extra=extra)

        self.store.change_request(event.approval.request, note)
