"""The approvals service: the one place where a person reads and decides approval requests.

The inbox pages, the API and the command line (through the API) all call :meth:`decide`, which
checks that the person may decide (holds one of the request's approver scopes, and is not its
caller), records the decision in the store and wakes the call waiting for it (the store's
wake-up, the one relayed answers use). A request whose tool was changed by a reload (another
definition digest, or no such tool any more) reads ``voided``, and is marked so in the store the
first time the service sees it, so it can be neither decided nor spent.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Mapping

from host.approvals.inbox import Decision, InboxRequest
from host.auth import Authenticator, missing_scopes
from host.auth.identity import Identity
from host.errors import Forbidden, NotFound
from host.machine import Machine
from host.store import Store
from host.store.requests import ApprovalRequest, RequestStatus, Verdict

__all__ = ["ApprovalsService", "Decision", "DecisionHook", "InboxRequest", "withdraw_request"]

log = logging.getLogger("host.approvals")

DecisionHook = Callable[[str, ApprovalRequest], None]
"""Told about each decision (``approved``, ``rejected``, or ``decided`` for one of several)."""

VERDICTS: Mapping[str, Verdict] = {"approve": "approve", "reject": "reject"}


class ApprovalsService:
    """The approval requests of one host, as the people who decide them see them.

    Args:
        store: The shared store.
        machines: The tools served now, by name (to void requests of changed tools).
        decided: Told about each decision (the webhook), never delaying it.
    """

    def __init__(
        self,
        store: Store,
        machines: Mapping[str, Machine],
        *,
        decided: DecisionHook | None = None,
    ) -> None:
        self.store = store
        self.digests = {name: m.definition for name, m in machines.items()}
        self.on_decided = decided
        #: Establishes a person again at each decision; set by the app that serves the routes
        #: (None: identities are taken as given, as in-process tools and tests hand them over).
        self.authenticator: Authenticator | None = None

    def current(self, who: Identity) -> Identity:
        """Who ``who`` is now: "may this person decide now", the one check every route makes.

        The inbox (at each page, from the session's proof), the API and the command line (at
        each decision) all call it: the person is established again exactly as an API call
        would be, so a revoked static token is refused (within the tokens file's look-up
        interval, a second) and a removed approver scope no longer counts.

        Raises:
            host.errors.AuthError: The proof no longer holds (the person is signed out).
        """
        return who if self.authenticator is None else self.authenticator.again(who)

    def decidable(self, who: Identity) -> list[InboxRequest]:
        """The pending requests ``who`` may decide, newest first."""
        return [
            InboxRequest.of(r, "pending")
            for r in self._current()
            if self._status(r) == "pending" and self._may_decide(who, r)
        ]

    def history(self, who: Identity, limit: int = 50) -> list[InboxRequest]:
        """The decided, expired and voided requests ``who`` may see, newest first."""
        seen = [
            InboxRequest.of(r, status)
            for r in self._current()
            if (status := self._status(r)) != "pending" and self._may_see(who, r)
        ]
        return seen[:limit]

    def get(self, who: Identity, request_id: str) -> InboxRequest:
        """One request ``who`` may see.

        Raises:
            NotFound: There is no such request.
            Forbidden: ``who`` is neither its caller nor one of its approvers.
        """
        request = self.store.request(request_id)
        if request is None:
            raise NotFound(f"there is no approval request {request_id}")
        if not self._may_see(who, request):
            raise Forbidden(f"{who.principal} may not see approval request {request_id}")
        return InboxRequest.of(request, self._status(request))

    def decide(self, who: Identity, request_id: str, verdict: str, reason: str) -> InboxRequest:
        """Record ``who``'s decision on the request, and wake the call waiting for it.

        Raises:
            ValueError: ``verdict`` is neither ``approve`` nor ``reject``.
            NotFound: There is no such request.
            Forbidden: ``who`` made the call, or holds none of its approver scopes.
            host.errors.AuthError: ``who``'s proof no longer holds (:meth:`current`).
            Conflict: The request is no longer pending (decided, expired or voided), or ``who``
                decided it already.
        """
        if verdict not in VERDICTS:
            raise ValueError(f"a verdict is approve or reject, not {verdict!r}")
        who = self.current(who)
        request = self.store.request(request_id)
        if request is None:
            raise NotFound(f"there is no approval request {request_id}")
        if who.owner == request.caller:
            raise Forbidden(
                f"{who.principal} made request {request_id}: nobody approves their own request"
            )
        if not self._may_decide(who, request):
            raise Forbidden(
                f"{who.principal} holds none of {', '.join(request.approvers)}, the scopes "
                f"that may decide request {request_id}"
            )
        self._status(request)  # NOTE: voids it first if its tool changed
        retried = any(d.principal == who.principal for d in request.decisions)
        decided = self.store.decide_request(request_id, who.principal, VERDICTS[verdict], reason)
        if retried:
            return InboxRequest.of(decided)  # NOTE: told already, when it was recorded
        log.info(
            "approval decided",
            extra={"event": "approval_decided", "request": request_id, "tool": decided.tool,
                   "principal": who.principal, "verdict": verdict},
        )  # fmt: skip
        if self.on_decided is not None:
            try:
                self.on_decided(decided.status(time.time()), decided)
            except Exception:
                # NOTE: the decision is recorded: a hook that fails (metrics on a full disk)
                # must not turn its acknowledgement into a 500 the approver would retry.
                log.exception(
                    "a decision's hook failed",
                    extra={"event": "approval_hook_failed", "request": request_id},
                )
        return InboxRequest.of(decided)

    def withdraw(self, request_id: str) -> bool:
        """Withdraw a request its caller no longer wants (the task that made it was cancelled).

        Only a request not yet spent can be withdrawn: then no call can act on it, deciding it
        is refused (409) and it is gone from the pending ones. False when its act was already
        let through (or there is no such request): the act goes on.
        """
        return withdraw_request(self.store, request_id)

    def _current(self) -> list[ApprovalRequest]:
        return self.store.requests()

    def _status(self, request: ApprovalRequest) -> RequestStatus:
        """The request's status now, voiding it first if its tool changed since it was made."""
        now = time.time()
        changed = self.digests.get(request.tool) != request.definition
        if request.voidable(now) and changed:
            self.store.end_request(request.id, void=True)
            return "voided"
        return request.status(now)

    @staticmethod
    def _may_decide(who: Identity, request: ApprovalRequest) -> bool:
        if who.owner == request.caller:
            return False
        return any(not missing_scopes(who.scopes, [scope]) for scope in request.approvers)

    @classmethod
    def _may_see(cls, who: Identity, request: ApprovalRequest) -> bool:
        return who.owner == request.caller or any(
            not missing_scopes(who.scopes, [scope]) for scope in request.approvers
        )


def withdraw_request(
    store: Store,
    request_id: str,
    ended: Callable[[ApprovalRequest, str, str], None] | None = None,
) -> bool:
    """Mark the request withdrawn unless its approval was spent (:meth:`ApprovalsService.withdraw`).

    ``ended(request, "cancelled", caller)`` is told once it is (the audit trail's ``decision``
    record: its caller cancelled the task that waited for it).

    NOTE: over the version it read, like every change of a request, so a spend and a withdrawal
    racing each other cannot both win: either the act goes on or nothing is done.
    """

    def withdraw(current: ApprovalRequest) -> ApprovalRequest | None:
        if current.spent_by is not None or current.withdrawn:
            return None
        if current.status(time.time()) not in ("pending", "approved"):
            return None
        return current.changed(withdrawn=True)

    after = store.change_request(request_id, withdraw)
    if after is None or not after.withdrawn or after.spent_by is not None:
        return False
    store.end_request(request_id)  # NOTE: frees its binding: an identical call asks anew
    log.info(
        "approval withdrawn",
        extra={"event": "approval_withdrawn", "request": request_id, "tool": after.tool},
    )
    if ended is not None:
        ended(after, "cancelled", after.caller)
    return True
