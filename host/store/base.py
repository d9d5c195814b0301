"""The shared store's contract, and the small helpers every backend uses.

The protocol layer keeps these kinds of record here, and each needs every worker process (and, with
Redis, every host instance) to see the same thing:

* act claims: :meth:`Store.claim_act` lets exactly one caller run an act for a key, and records
  what became of it (its result, or that its result is unknown);
* single-use claims: :meth:`Store.add` inserts only if absent, so a token is spent once;
* records: :meth:`Store.get`, :meth:`Store.put` and :meth:`Store.delete`;
* relayed answers: :meth:`Store.push` and :meth:`Store.pop` hand a value from one worker to another;
* remembered approvals (:class:`host.store.records.Approval`): :meth:`Store.grant_approval`,
  :meth:`Store.find_approval`, listed and revoked by id, principal or tool; each expires exactly
  when its duration ends;
* audit records (:class:`host.store.records.AuditRecord`): one per call, written by
  :meth:`Store.write_audit`, read newest first by :meth:`Store.audit_records`, and deleted past
  the retention period by :meth:`Store.prune_audit`.

Every record has a time to live. Expired records are invisible at once and deleted lazily. Act
keys, record keys and queue keys are three separate namespaces.

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
stays its own: ``lost`` is a report to retries, never a release.

What each backend can promise:

* SQLite (one machine): a claim and a recorded result are committed with ``synchronous=FULL``
  before the act starts and before the call returns, so they survive a crash of the process and of
  the machine (a power loss), as far as the disk honours fsync. Other records use
  ``synchronous=NORMAL``: they survive a crash of the process, but a power loss may forget the last
  moments of them. If the database
  file is deleted or replaced while the host runs, every write is refused and :meth:`Store.health`
  says so: a new file would not know the acts already claimed.
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

import math
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal, Protocol, runtime_checkable

if TYPE_CHECKING:
    from host.store.records import Approval, AuditRecord

__all__ = [
    "DEFAULT_LEASE_S",
    "ActClaim",
    "ActState",
    "Risk",
    "Store",
    "backoff",
    "check_ttl",
]

DEFAULT_LEASE_S = 5.0
"""How long an act claim's lease lasts without renewal: a dead owner's claim reads ``lost`` after
at most this long. Its owner renews it every third of this."""

LAPSED = "the process running it stopped renewing its claim (it died, hung, or lost the store)"
"""The reason of a claim that reads ``lost`` because its lease lapsed."""


@dataclass(frozen=True)
class ActState:
    """What became of an act that was claimed.

    Attributes:
        status: ``running`` (a live owner holds it), ``done`` (its result is recorded) or ``lost``
            (it may have happened; its outcome is unknown).
        value: The recorded result, when ``done``.
        incident: Fixed when the act was claimed, so every report about it names the same id.
        reason: Why it is ``lost``: its owner stopped renewing its lease, or the text of the
            error that kept its result from being recorded.
    """

    status: Literal["running", "done", "lost"]
    value: str | None
    incident: str
    reason: str | None = None


@runtime_checkable
class ActClaim(Protocol):
    """The right to run one act, given to exactly one caller by :meth:`Store.claim_act`."""

    key: str
    incident: str

    def record(self, value: str) -> None:
        """Record the act's result, so every later caller gets it as ``done``.

        Either way the claim stops being renewed. If the result cannot be written, the claim is
        marked ``lost`` (with the error as its reason) if the store still takes that, and reads
        ``lost`` once its lease lapses otherwise; it is never handed to anyone else.

        Raises:
            host.errors.StoreError: The result could not be written.
            RuntimeError: The claim recorded a result already.
        """
        ...


@dataclass(frozen=True)
class Risk:
    """One way a store can lose records, found by :meth:`Store.durability`.

    Attributes:
        message: One line for the operator: what is risked and how to fix it.
        refuse: True when the host must not start on this store unless the operator acknowledged
            the risk (see :data:`host.store.durability.VOLATILE_OK`); False for a warning.
    """

    message: str
    refuse: bool


@runtime_checkable
class Store(Protocol):
    """Act claims, records and queues shared by every process that opens the same URL.

    Attributes:
        lease_s: How long an act claim lasts without its owner renewing it: a dead owner's
            claim reads ``lost`` at most this long after its death.
    """

    lease_s: float

    def claim_act(self, key: str, *, ttl_s: float, incident: str) -> ActClaim | ActState:
        """Claim the act ``key`` for this caller, or say what became of it.

        The claim is committed before this returns, with this process as its owner and a lease
        that the process renews until the claim records its result.

        Args:
            key: What identifies the act (for example the nonce of a request state).
            ttl_s: How long the record lives after the result is recorded or the owner was last
                known alive.
            incident: The id every report about this act will name; kept only if this call
                claims it.

        Returns:
            An :class:`ActClaim` if this caller may run the act; otherwise the act's state.

        Raises:
            host.errors.StoreError: The store failed, or refuses claims (its file was replaced).
        """
        ...

    def act_state(self, key: str) -> ActState | None:
        """What became of the act ``key``, or None if it was never claimed (or has expired)."""
        ...

    def wait_act(self, key: str, timeout_s: float) -> ActState | None:
        """Wait until the act ``key`` is no longer running, up to ``timeout_s``.

        Returns:
            Its state (still ``running`` if time ran out), or None if there is no such act.
        """
        ...

    def add(self, key: str, value: str, ttl_s: float) -> bool:
        """Insert a record only if there is none (or only an expired one) for ``key``.

        Returns:
            True if this call inserted it; False if the key was already taken.
        """
        ...

    def get(self, key: str) -> str | None:
        """The record's value, or None if there is none, it expired, or its act is still running."""
        ...

    def put(self, key: str, value: str, ttl_s: float) -> None:
        """Insert or overwrite a record."""
        ...

    def delete(self, key: str) -> None:
        """Remove a record if there is one."""
        ...

    def push(self, key: str, value: str, ttl_s: float) -> None:
        """Append ``value`` to the queue ``key``, which expires ``ttl_s`` after its last push."""
        ...

    def pop(self, key: str, timeout_s: float) -> str | None:
        """Take the oldest value from the queue ``key``, waiting up to ``timeout_s`` for one.

        Each value is taken once, across all processes. A waiting caller costs no store traffic
        of its own: one thread per process watches for pushes and wakes it.

        Returns:
            The value, or None if none arrived in time. ``timeout_s <= 0`` does not wait.
        """
        ...

    def grant_approval(
        self, principal: str, tool: str, question: str, key: str, ttl_s: float
    ) -> Approval:
        """Remember a yes for ``ttl_s`` seconds from now, replacing the same approval's earlier one.

        Returns:
            The approval kept; its id is :func:`host.store.records.approval_id` of the four.
        """
        ...

    def find_approval(self, approval: str) -> Approval | None:
        """The approval with this id, if it is remembered now (not expired, not revoked)."""
        ...

    def approvals(self, *, principal: str | None = None, tool: str | None = None) -> list[Approval]:
        """The approvals remembered now, of ``principal`` and ``tool`` when given; oldest first."""
        ...

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
        ...

    def write_audit(self, record: AuditRecord, *, rank: int, keep_s: float) -> bool:
        """Write the audit record of a call, in one step.

        A call has one record: a write for a call that has one already replaces it only with a
        higher ``rank`` (:data:`host.store.records.ACTED` over :data:`~host.store.records.ENDED`).

        Args:
            record: The record.
            rank: How much this writer knows of the call.
            keep_s: The retention period: Redis expires the record after it; SQLite keeps it
                until :meth:`prune_audit`.

        Returns:
            True if the record was written.
        """
        ...

    def write_audits(self, records: Sequence[tuple[AuditRecord, int]], *, keep_s: float) -> None:
        """Write the audit records of many calls at once, each as :meth:`write_audit` would.

        One transaction (SQLite) or one round trip (Redis) for the whole batch, in order: a later
        record of the same call replaces an earlier one only with a higher rank.

        Args:
            records: Each record with its rank.
            keep_s: The retention period, as for :meth:`write_audit`.
        """
        ...

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
        ...

    def prune_audit(self, before: float) -> int:
        """Delete the records of calls that ended before ``before`` (Unix time); how many."""
        ...

    def health(self) -> str | None:
        """None if the store is reachable and takes a real write now; else one line why not."""
        ...

    def durability(self) -> list[Risk]:
        """How this store can lose records (an empty list when it keeps them as promised)."""
        ...

    def close(self) -> None:
        """Stop background threads and release connections; the store is unusable afterwards."""
        ...


def check_ttl(ttl_s: float, what: str = "ttl_s") -> None:
    """Reject a time to live that is not a positive, finite number of seconds.

    Raises:
        ValueError: A programming error in the caller, not bad user input.
    """
    if not (isinstance(ttl_s, int | float) and math.isfinite(ttl_s) and ttl_s > 0):
        raise ValueError(f"{what} must be a positive number of seconds, got {ttl_s!r}")


def backoff(first_s: float = 0.005, limit_s: float = 0.02) -> Iterator[float]:
    """Sleep lengths for polling: start short so a handover is quick, then settle at ``limit_s``."""
    delay = first_s
    while True:
        yield delay
        delay = min(delay * 1.5, limit_s)
