"""The store's approvals: remembered yeses, and approval requests decided, spent and waited for.

:class:`Approving` is a part of :class:`host.store.shared.Store` (the contract is there). A
request changes only by compare-and-swap over the version it was read at
(:meth:`Approving.change_request`), so any number of processes decide and spend it at once.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable

from host.errors import Conflict, Forbidden, NotFound, StoreError
from host.store.checks import check_filters, check_limit, check_revoke
from host.store.keeping import Keeping
from host.store.records import Approval
from host.store.requests import HISTORY_S, ApprovalRequest, Decision, Verdict
from host.store.roles import Approvals, Requests
from host.store.waiting import RECHECK_S

__all__ = ["Approving"]

log = logging.getLogger("host.store")


class Approving(Keeping):
    """Remembered approvals and approval requests of :class:`host.store.shared.Store`."""

    _approvals: Approvals
    _requests: Requests

    # -- remembered approvals --------------------------------------------------------------------

    def grant_approval(
        self, principal: str, tool: str, question: str, key: str, ttl_s: float
    ) -> Approval:
        """Remember a yes for ``ttl_s`` seconds from now, replacing the same approval's earlier one.

        Returns:
            The approval kept; its id is :func:`host.store.records.approval_id` of the four.
        """
        approval = Approval.new(principal, tool, question, key, ttl_s)
        self._approvals.grant(approval, ttl_s)
        return approval

    def find_approval(self, approval: str) -> Approval | None:
        """The approval with this id, if it is remembered now (not expired, not revoked)."""
        return self._approvals.find(approval)

    def approvals(self, *, principal: str | None = None, tool: str | None = None) -> list[Approval]:
        """The approvals remembered now, of ``principal`` and ``tool`` when given; oldest first."""
        check_filters(principal=principal, tool=tool)
        return self._approvals.listed(principal, tool)

    def revoke_approvals(
        self,
        *,
        approval: str | None = None,
        principal: str | None = None,
        tool: str | None = None,
    ) -> int:
        """Forget the approvals matching every filter given (at least one); how many there were.

        Raises:
            ValueError: No filter was given.
        """
        check_revoke(approval, principal, tool)
        return self._approvals.revoke(approval, principal, tool)

    # -- approval requests -----------------------------------------------------------------------

    def open_request(
        self, request: ApprovalRequest, *, most: int | None = None
    ) -> ApprovalRequest | None:
        """Keep ``request``, unless a live request holds its binding: then that one.

        Of any number of callers opening the same binding at once, across processes, one
        request is kept and every caller gets it. With ``most``: None, and nothing kept, when
        the caller has that many requests open already (pending and not yet told), counted in
        the same atomic step, so concurrent calls never pass the limit.
        """
        if most is not None:
            check_limit(most)
        return self._requests.open(request, _keep_s(request), most)

    def request(self, request_id: str) -> ApprovalRequest | None:
        """The request with this id, while it is kept (its expiry plus its history)."""
        return self._requests.get(request_id)

    def requests(self) -> list[ApprovalRequest]:
        """Every request kept, newest first."""
        return self._requests.listed()

    def change_request(
        self, request_id: str, change: Callable[[ApprovalRequest], ApprovalRequest | None]
    ) -> ApprovalRequest | None:
        """Apply ``change`` to the request, over the version it read, retrying on a race.

        ``change`` returns the new request (one version later) or None to leave it as it is;
        what it raises goes to the caller. Returns the request as it is afterwards, or None
        when there is no such request.
        """
        while True:
            current = self._requests.get(request_id)
            if current is None:
                return None
            new = change(current)
            if new is None:
                return current
            if self._requests.swap(new, _keep_s(new)):
                return new

    def decide_request(
        self, request_id: str, principal: str, verdict: Verdict, reason: str
    ) -> ApprovalRequest:
        """Add one approver's decision, and wake the calls waiting for it.

        The same decision again (a retry whose first answer was lost) returns the request as
        it is. A wake-up the store refuses once the decision is kept is logged, not raised:
        a waiting call looks at its request again within half a second anyway.

        Raises:
            NotFound: No such request.
            Forbidden: ``principal`` made the call: nobody approves their own request.
            Conflict: The request is no longer pending, or ``principal`` decided it already.
        """

        def decide(current: ApprovalRequest) -> ApprovalRequest | None:
            if principal == current.caller:
                raise Forbidden(f"{principal} made request {request_id} and cannot decide it")
            mine = [d for d in current.decisions if d.principal == principal]
            if mine and mine[0].verdict == verdict and not current.voided:
                # NOTE: a retry of a decision the store kept though its answer was lost (a
                # timeout, a 503 after the write): acknowledged again, never a 409.
                return None
            status = current.status(time.time())
            if status != "pending":
                raise Conflict(f"request {request_id} is {status}, no longer pending")
            if mine:
                raise Conflict(f"{principal} has already decided request {request_id}")
            return current.decided(Decision(principal, verdict, reason, time.time()))

        decided = self.change_request(request_id, decide)
        if decided is None:
            raise NotFound(f"there is no approval request {request_id}")
        try:
            self._queues.push(_wake_key(request_id), "decided", 60.0)
        except StoreError as exc:
            # NOTE: the decision is kept: the waiting call reads it when it looks again
            # (every RECHECK_S), so the approver is told it was recorded, not 503.
            log.warning(
                "a decision's wake-up was not written: %s", exc.message,
                extra={"event": "approval_wake_failed", "request": request_id},
            )  # fmt: skip
        return decided

    def spend_request(self, request_id: str, holder: str) -> bool:
        """Spend the approved request on the call ``holder``: whether that call may act.

        True for exactly one holder (and again for the same holder, a retried round); the
        request's binding is freed, so the next identical call makes a new request.
        """

        def spend(current: ApprovalRequest) -> ApprovalRequest | None:
            if current.status(time.time()) != "approved" or current.spent_by is not None:
                return None
            return current.changed(spent_by=holder, told=True)

        spent = self.change_request(request_id, spend)
        if spent is None or spent.spent_by != holder:
            return False
        self._requests.release(spent.binding, spent.id)
        return True

    def end_request(self, request_id: str, *, void: bool = False) -> ApprovalRequest | None:
        """Mark a rejected or expired request told (or any open one voided), and free its
        binding: the next identical call makes a new request. The request as it is then."""

        def end(current: ApprovalRequest) -> ApprovalRequest | None:
            if void:
                return None if current.voided or current.spent_by else current.changed(voided=True)
            return None if current.told else current.changed(told=True)

        ended = self.change_request(request_id, end)
        if ended is not None:
            self._requests.release(ended.binding, ended.id)
            if void:
                self._queues.push(_wake_key(request_id), "voided", 60.0)
        return ended

    def wait_request(self, request_id: str, timeout_s: float) -> ApprovalRequest | None:
        """The request once it is no longer pending, or as it is after ``timeout_s``.

        A decision wakes one waiter at once (the same wake-up relayed answers use); any other
        looks again within half a second.
        """
        deadline = time.monotonic() + timeout_s
        while True:
            current = self._requests.get(request_id)
            left = deadline - time.monotonic()
            if current is None or current.status(time.time()) != "pending" or left <= 0:
                return current
            left = min(left, current.expires - time.time() + 0.05)
            self.pop(_wake_key(request_id), max(0.0, min(left, RECHECK_S)))


def _keep_s(request: ApprovalRequest) -> float:
    """How long a request is kept from now: until it expires, then for its history."""
    return max(1.0, request.expires - time.time() + HISTORY_S)


def _wake_key(request_id: str) -> str:
    return "approval:" + request_id
