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
lease, then record or lost), renews leases and waits. Its parts, each a module by its job:
act claims and locks here; records, queues and places in :mod:`host.store.keeping`; remembered
approvals and approval requests in :mod:`host.store.approving`; URL asks in
:mod:`host.store.asking`; audit records in :mod:`host.store.auditing`. A backend writes only
the small role protocols of :mod:`host.store.roles`, each method one atomic step on checked
arguments, and gathers them in a :class:`host.store.roles.Backend`: :mod:`host.store.sqlite` and
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

from pathlib import Path

from host.errors import StoreError
from host.store.approving import Approving
from host.store.asking import Asking
from host.store.asks import UrlAskRecords
from host.store.auditing import Auditing
from host.store.checks import check_claim, check_lock, check_ttl
from host.store.claims import ActClaim, Lock, new_token
from host.store.leases import LeaseKeeper
from host.store.roles import Backend, Claims, Started
from host.store.sessions import SessionBook
from host.store.values import DEFAULT_LEASE_S, ActState, Risk
from host.store.waiting import poll_until

__all__ = ["Started", "Store"]


class Store(Approving, Asking, Auditing):
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
