"""The one store the host holds: its contract, the roles a backend writes, and :class:`Store`.

The protocol layer keeps these kinds of record here, and each needs every worker process (and, with
Redis, every host instance) to see the same thing:

* act claims: :meth:`Store.claim_act` lets exactly one caller run an act for a key, and records
  what became of it (its result, or that its result is unknown);
* locks: :meth:`Store.acquire_lock` lets one holder at a time run what a lock's name guards;
* single-use claims: :meth:`Store.add` inserts only if absent, so a token is spent once;
* records: :meth:`Store.get`, :meth:`Store.put` and :meth:`Store.delete`;
* relayed answers: :meth:`Store.push` and :meth:`Store.pop` hand a value from one worker to another;
* remembered approvals (:class:`host.store.records.Approval`): :meth:`Store.grant_approval`,
  :meth:`Store.find_approval`, listed and revoked by id, principal or tool; each expires exactly
  when its duration ends;
* audit records (:class:`host.store.records.AuditRecord`): one per call, written by
  :meth:`Store.write_audit`, read newest first by :meth:`Store.audit_records`, and deleted past
  the retention period by :meth:`Store.prune_audit`;
* approval requests (:class:`host.store.requests.ApprovalRequest`): opened once per binding by
  :meth:`Store.open_request`, decided by :meth:`Store.decide_request`, spent by exactly one call
  with :meth:`Store.spend_request`, waited for with :meth:`Store.wait_request`;
* places (:mod:`host.store.places`): :meth:`Store.take_place` adds a member to a group, evicting
  the least recently renewed past a limit, :meth:`Store.renew_place`, :meth:`Store.holds_place`
  and :meth:`Store.give_place`;
* URL asks (:class:`host.store.asks.UrlAsk`): opened once per binding by
  :meth:`Store.open_ask`, submitted once by :meth:`Store.submit_ask`, waited for with
  :meth:`Store.wait_ask`, forgotten by :meth:`Store.end_ask` (kept in the records and queues).

Every record has a time to live. Expired records are invisible at once and deleted lazily. Act
keys, lock names, record keys and queue keys are four separate namespaces.

:class:`Store` is written once: it checks every argument, runs the claim lifecycle (token, claim,
lease, then record or lost), renews leases and waits. A backend writes only the small role
protocols of :mod:`host.store.roles`, each method one atomic step on checked arguments, and
gathers them in a :class:`host.store.roles.Backend`: :mod:`host.store.sqlite` and
:mod:`host.store.redis`.

**What "at most once" means.** An act claimed with :meth:`Store.claim_act` is never handed to a
second caller while its record lives (``ttl_s``, counted from the last moment its owner was known
alive, or from when its result was recorded): not after its owner dies, not after its result
failed to be written, not after the store restarted with its data. Every later caller learns one
of three things, never "free": ``running`` (a live owner renews a lease on it), ``done`` (the
recorded result), or ``lost`` (the owner died, or could not record the result: the act may have
happened and its outcome is unknown). Each claim carries an incident id, fixed when it was made,
so every report about it names the same one.

The owner's process renews its leases from one background thread per store object (every third
of ``lease_s``); a process that is killed stops renewing, and its claims read as ``lost`` within
``lease_s``. A process that is only slow (stopped, swapped out, starved of the store's write
lock) for longer than ``lease_s`` reads ``lost`` the same way meanwhile; when it comes back, its
renewals make the claim ``running`` again and its result makes it ``done``. Either way the claim
stays its own: ``lost`` is a report to retries, never a release. A lock is the opposite: a lapsed
lease frees it for the next caller, since a lock guards against overlap, not against repetition.

What each backend can promise:

* SQLite (one machine): a claim and a recorded result are committed with ``synchronous=FULL``
  before the act starts and before the call returns, so they survive a crash of the process and of
  the machine (a power loss), as far as the disk honours fsync. Other records use
  ``synchronous=NORMAL``: they survive a crash of the process, but a power loss may forget the last
  moments of them. If the database file is deleted or replaced while the host runs, every write is
  refused and :meth:`Store.health` says so: a new file would not know the acts already claimed.
* Redis (several machines): a claim is as durable as the server's persistence. With
  ``appendonly yes`` and ``appendfsync always`` it survives a crash of the server; with the
  default ``appendfsync everysec`` a crash of the server (not a restart) may forget the last
  second of claims, and an act claimed in that second could be claimed again. With RDB snapshots
  only, a crash forgets everything since the last snapshot; without persistence, a restart forgets
  every claim; evictions (a ``maxmemory-policy`` other than ``noeviction``) forget claims at
  random. :meth:`Store.durability` says which of these applies; see :mod:`host.store.durability`.

Nothing here can promise that an act whose owner died did or did not happen: ``lost`` is the
honest answer, and an act that must be exactly-once needs an idempotency key of its own downstream.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Sequence
from pathlib import Path

from host.errors import Conflict, Forbidden, NotFound, StoreError
from host.store.asks import UrlAsk, UrlAskRecords
from host.store.chain import CHECKPOINT_EVERY
from host.store.checks import (
    check_claim,
    check_filters,
    check_limit,
    check_lock,
    check_revoke,
    check_ttl,
)
from host.store.claims import ActClaim, Lock, new_token
from host.store.leases import LeaseKeeper
from host.store.records import Approval, AuditRecord
from host.store.requests import HISTORY_S, ApprovalRequest, Decision, Verdict
from host.store.roles import Backend, Claims, Started
from host.store.sessions import SessionBook
from host.store.signing import Signer
from host.store.values import DEFAULT_LEASE_S, ActState, Risk
from host.store.waiting import poll_until, pop_waiting

__all__ = ["Started", "Store"]

log = logging.getLogger("host.store")

#: How often a waiting call looks at its request again when no wake-up came (another waiter
#: may have taken the one a decision pushed).
_RECHECK_S = 0.5


class Store:
    """Act claims, locks, records and queues shared by every process that opens the same URL.

    Open one with :func:`host.store.open_store`; close it with :meth:`close`.

    Args:
        backend: Where the records are kept.
        lease_s: How long an act claim or lock lasts without its owner renewing it: a dead
            owner's claims read ``lost``, and its locks come free, at most this long after its
            death.

    Attributes:
        lease_s: As given.
        sessions: The pages' sign-in sessions (:mod:`host.store.sessions`).
    """

    def __init__(self, backend: Backend, *, lease_s: float = DEFAULT_LEASE_S) -> None:
        check_ttl(lease_s, "lease_s")
        self.lease_s = lease_s
        self.backend = backend
        # NOTE: the roles are looked up once, so the hot path (claim, record) pays no more
        # attribute lookups than a backend called directly.
        self._acts = backend.acts
        self._records = backend.records
        self._queues = backend.queues
        self._approvals = backend.approvals
        self._audit = backend.audit
        self._requests = backend.requests
        self._places = backend.places
        self._asks = UrlAskRecords(self)
        self.sessions = SessionBook(backend.sessions)
        self._keeper = LeaseKeeper(self._renew, lease_s, repr(backend))

    def __repr__(self) -> str:
        return f"Store({self.backend!r})"

    @property
    def file(self) -> Path | None:
        """The database file of a store in one file (SQLite), else None."""
        return self.backend.file

    # -- act claims and locks --------------------------------------------------------------------

    def claim_act(
        self, key: str, *, ttl_s: float, incident: str, audit: Started | None = None
    ) -> ActClaim | ActState:
        """Claim the act ``key`` for this caller, or say what became of it.

        The claim is committed before this returns, with this process as its owner and a lease
        that the process renews until the claim records its result. ``audit`` goes with it: the
        record of the act if it were lost, kept at rank :data:`host.store.records.STARTED` in the
        same durable write (one transaction, one Redis script), so an act never starts without
        it, and nothing is written for a caller that does not get the claim.

        Args:
            key: What identifies the act (for example the nonce of a request state).
            ttl_s: How long the record lives after the result is recorded or the owner was last
                known alive.
            incident: The id every report about this act will name; kept only if this call
                claims it.
            audit: The act's audit record as if it were lost, and its retention.

        Returns:
            An :class:`ActClaim` if this caller may run the act; otherwise the act's state.

        Raises:
            host.errors.StoreError: The store failed, or refuses claims (its file was replaced).
        """
        check_claim(key, ttl_s, incident)
        if audit is not None:
            check_ttl(audit[1], "keep_s")
        token = new_token()
        acts = self._acts
        found = acts.claim(key, token, incident, ttl_s, self.lease_s, audit)
        if found is not None:
            return found
        self._keeper.hold(token, key)
        return ActClaim(key, incident, token, ttl_s, acts.record, acts.mark_lost, self._keeper)

    def act_state(self, key: str) -> ActState | None:
        """What became of the act ``key``, or None if it was never claimed (or has expired)."""
        return self._acts.state(key)

    def wait_act(self, key: str, timeout_s: float) -> ActState | None:
        """Wait until the act ``key`` is no longer running, up to ``timeout_s``.

        Returns:
            Its state (still ``running`` if time ran out), or None if there is no such act.
        """
        return poll_until(
            lambda: self._acts.state(key),
            lambda state: state is None or state.status != "running",
            timeout_s,
            0.25,
        )

    def acquire_lock(self, name: str, *, wait_s: float = 0.0) -> Lock | None:
        """Hold the lock ``name``, waiting up to ``wait_s`` for its holder to release it.

        A lock is held by one caller at a time across every process of the store, and renewed
        with this process's act claims: if the holder dies, the lock comes free within
        :attr:`lease_s`. A holder stalled past its lease loses it the same way (a lease cannot
        tell a dead holder from a frozen one), and learns so from :meth:`Lock.release`.

        Args:
            name: What the lock guards (for example a tool and the ticket it changes).
            wait_s: How long to wait for it; 0 takes it only if it is free now.

        Returns:
            The held :class:`Lock`, or None if another holder kept it all that time.

        Raises:
            host.errors.StoreError: The store failed.
        """
        check_lock(name, wait_s)
        token = new_token()
        acts = self._acts
        if not poll_until(lambda: acts.take_lock(name, token, self.lease_s), bool, wait_s, 0.1):
            return None
        self._keeper.hold_lock(token, name)
        return Lock(name, token, acts.release_lock, self._keeper)

    def _renew(self, claims: Claims, locks: Claims) -> None:
        failed: StoreError | None = None
        if claims:
            try:
                self._acts.renew(claims, self.lease_s)
            except StoreError as exc:
                failed = exc  # the locks are renewed all the same
        if locks:
            self._acts.renew_locks(locks, self.lease_s)
        if failed is not None:
            raise failed

    # -- records and queues ----------------------------------------------------------------------

    def add(self, key: str, value: str, ttl_s: float) -> bool:
        """Insert a record only if there is none (or only an expired one) for ``key``.

        Returns:
            True if this call inserted it; False if the key was already taken.
        """
        check_ttl(ttl_s)
        return self._records.add(key, value, ttl_s)

    def get(self, key: str) -> str | None:
        """The record's value, or None if there is none or it expired."""
        return self._records.get(key)

    def put(self, key: str, value: str, ttl_s: float) -> None:
        """Insert or overwrite a record."""
        check_ttl(ttl_s)
        self._records.put(key, value, ttl_s)

    def delete(self, key: str) -> None:
        """Remove a record if there is one."""
        self._records.delete(key)

    def push(self, key: str, value: str, ttl_s: float) -> None:
        """Append ``value`` to the queue ``key``, which expires ``ttl_s`` after its last push."""
        check_ttl(ttl_s)
        self._queues.push(key, value, ttl_s)

    def pop(self, key: str, timeout_s: float) -> str | None:
        """Take the oldest value from the queue ``key``, waiting up to ``timeout_s`` for one.

        Each value is taken once, across all processes. A waiting caller costs no store traffic
        of its own: one thread per process watches for pushes and wakes it.

        Returns:
            The value, or None if none arrived in time. ``timeout_s <= 0`` does not wait.
        """
        return pop_waiting(self._queues.watcher, key, timeout_s, self._queues.take)

    def take_place(self, group: str, member: str, *, most: int | None, ttl_s: float) -> list[str]:
        """Make ``member`` a member of ``group`` for ``ttl_s``, evicting past ``most`` members.

        The members that expire first (renewed least recently) make room, so the group never
        holds more than ``most`` live members (``most=None``: no limit); a member already there
        is renewed and evicts none.

        Returns:
            The members evicted, least recently renewed first.
        """
        check_ttl(ttl_s)
        if most is not None and most < 1:
            raise ValueError(f"most must be at least 1, got {most}")
        return self._places.take(group, member, most, ttl_s)

    def renew_place(self, group: str, member: str, *, ttl_s: float) -> bool:
        """Make a live ``member`` of ``group`` expire ``ttl_s`` from now; whether it was one."""
        check_ttl(ttl_s)
        return self._places.renew(group, member, ttl_s)

    def holds_place(self, group: str, member: str) -> bool:
        """Whether ``member`` is a live member of ``group``."""
        return self._places.holds(group, member)

    def give_place(self, group: str, member: str) -> None:
        """Remove ``member`` from ``group`` if it is one."""
        self._places.give(group, member)

    # -- approvals and audit records -------------------------------------------------------------

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

    def write_audit(self, record: AuditRecord, *, rank: int, keep_s: float) -> bool:
        """Write the audit record of a call, in one step.

        A call has one record: a write for a call that has one already replaces it only with a
        higher ``rank`` (:data:`host.store.records.ACTED` over :data:`~host.store.records.ENDED`).
        NOTE: on SQLite it waits at most a second for another process's write lock, not the
        usual busy timeout: a stuck writer must not hold every call's answer for that long.

        Args:
            record: The record.
            rank: How much this writer knows of the call.
            keep_s: The retention period: Redis expires the record after it; SQLite keeps it
                until :meth:`prune_audit`.

        Returns:
            True if the record was written.
        """
        check_ttl(keep_s, "keep_s")
        return self._audit.write(record, rank, keep_s)

    def act_starting(self, record: AuditRecord, *, keep_s: float) -> None:
        """Keep the record of a first round's act (which has no claim) before the act starts.

        It is the record the act keeps if its worker dies (rank ``STARTED``): written into the
        audit records at once (Redis), or kept in a file of this process's own that whoever finds
        the process dead writes into them (SQLite, whose processes share one machine); either way
        it survives the worker's death, and the call's own record replaces it.

        Raises:
            host.errors.StoreError: It could not be kept.
        """
        check_ttl(keep_s, "keep_s")
        self._audit.started(record, keep_s)

    def write_audits(self, records: Sequence[tuple[AuditRecord, int]], *, keep_s: float) -> None:
        """Write the audit records of many calls at once, each as :meth:`write_audit` would.

        One transaction (SQLite) or one round trip (Redis) for the whole batch, in order: a later
        record of the same call replaces an earlier one only with a higher rank.

        Args:
            records: Each record with its rank.
            keep_s: The retention period, as for :meth:`write_audit`.
        """
        check_ttl(keep_s, "keep_s")
        if records:
            self._audit.write_many(records, keep_s)

    def audit_records(
        self,
        *,
        tool: str | None = None,
        principal: str | None = None,
        since: float | None = None,
        limit: int = 100,
    ) -> list[AuditRecord]:
        """The newest records that match every filter given, newest first.

        Args:
            tool: Only this tool's calls.
            principal: Only this caller's calls.
            since: Only calls that ended at this Unix time or later.
            limit: At most this many records.
        """
        check_filters(tool=tool, principal=principal)
        check_limit(limit)
        return self._audit.query(tool, principal, since, limit)

    def prune_audit(self, before: float) -> int:
        """Delete the audit chain's entries before its newest checkpoint older than ``before``
        (Unix time), so the chain stays verifiable from that checkpoint; how many."""
        return self._audit.prune(before)

    def audit_entries(self, *, after: int = 0, limit: int = 500) -> list[tuple[int, str, str]]:
        """The audit chain's entries after seq ``after``, in order: ``(seq, body, hash)``.

        ``body`` is the entry's canonical JSON, ``hash`` its SHA-256 as written
        (:mod:`host.store.chain`); :func:`host.store.chain_check.check_chain` checks them.
        """
        check_limit(limit)
        return self._audit.entries(after, limit)

    def audit_head(self) -> int:
        """The seq of the audit chain's newest entry (0: none yet)."""
        return self._audit.head_seq()

    def sign_checkpoints(self, signer: Signer | None, *, every: int = CHECKPOINT_EVERY) -> None:
        """Sign the audit chain's checkpoints with ``signer`` (None: write none), one at least
        every ``every`` entries (and every hour)."""
        self._audit.chain.signer = signer
        self._audit.chain.every = every

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
            # (every _RECHECK_S), so the approver is told it was recorded, not 503.
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
            self.pop(_wake_key(request_id), max(0.0, min(left, _RECHECK_S)))

    # -- URL asks --------------------------------------------------------------------------------

    def open_ask(self, ask: UrlAsk) -> UrlAsk:
        """Keep ``ask`` until it expires, unless a live ask holds its binding: then that one."""
        return self._asks.open(ask, _ask_keep_s(ask))

    def ask(self, ask_id: str) -> UrlAsk | None:
        """The live ask with this id, or None (never made, ended, or expired)."""
        return self._asks.get(ask_id)

    def submit_ask(self, ask_id: str, values: dict[str, object]) -> UrlAsk | None:
        """Keep the page's values (already encrypted) once, and wake the call waiting on it.

        Returns:
            The ask as submitted; None when there is no such live ask, or it was submitted.
        """
        current = self._asks.get(ask_id)
        if current is None:
            return None
        done = self._asks.submit(ask_id, values, _ask_keep_s(current))
        if done is not None:
            self._queues.push(UrlAskRecords.wake_key(ask_id), "submitted", 60.0)
        return done

    def wait_ask(self, ask_id: str, timeout_s: float) -> UrlAsk | None:
        """The ask once submitted, or as it is after ``timeout_s`` (None once it is gone)."""
        deadline = time.monotonic() + timeout_s
        while True:
            current = self._asks.get(ask_id)
            left = deadline - time.monotonic()
            if current is None or current.submitted or left <= 0:
                return current
            self.pop(UrlAskRecords.wake_key(ask_id), max(0.0, min(left, _RECHECK_S)))

    def end_ask(self, ask: UrlAsk) -> None:
        """Forget ``ask`` and its values (its call ended)."""
        self._asks.end(ask)

    # -- the store as a whole --------------------------------------------------------------------

    def health(self) -> str | None:
        """None if the store is reachable and takes a real write now; else one line why not."""
        return self.backend.health()

    def durability(self) -> list[Risk]:
        """How this store can lose records (an empty list when it keeps them as promised).

        Raises:
            host.errors.StoreError: The store cannot be reached to ask (Redis).
        """
        return self.backend.durability()

    def close(self) -> None:
        """Stop background threads and release connections; the store is unusable afterwards."""
        self._keeper.stop()
        self.backend.close()


def _keep_s(request: ApprovalRequest) -> float:
    """How long a request is kept from now: until it expires, then for its history."""
    return max(1.0, request.expires - time.time() + HISTORY_S)


def _ask_keep_s(ask: UrlAsk) -> float:
    """How long an ask is kept from now: until it expires."""
    return max(1.0, ask.expires - time.time())


def _wake_key(request_id: str) -> str:
    return "approval:" + request_id
