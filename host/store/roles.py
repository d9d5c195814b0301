"""The roles a store backend writes: one small protocol per kind of record, and :class:`Backend`.

:class:`host.store.shared.Store` is written once over these: it checks every argument and runs
the lifecycles (claim, lease, record or lost; request, decision, spend), and calls a role's method
for each atomic step, on arguments already checked. A backend (:mod:`host.store.sqlite`,
:mod:`host.store.redis`) writes each role in a module of its own and gathers them in a
:class:`Backend`; the roles of places and URL asks are :class:`host.store.places.Places` and
:class:`host.store.asks.UrlAskRecords`. What each method must promise is in its docstring; what
the store as a whole promises, in :mod:`host.store.shared`.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Protocol

from host.store.chain import Chain
from host.store.places import Places
from host.store.records import Approval, AuditRecord
from host.store.requests import ApprovalRequest
from host.store.sessions import SessionRecords
from host.store.values import ActState, Risk
from host.store.waiting import Watcher

__all__ = [
    "ActClaims",
    "Approvals",
    "AuditLog",
    "Backend",
    "Claims",
    "Queues",
    "Records",
    "Requests",
    "Started",
]

Started = tuple[AuditRecord, float]
"""The audit record of an act as if it were lost, and its retention in seconds (``keep_s``)."""

Claims = list[tuple[str, str]]
"""``(token, key)`` pairs of act claims, or ``(token, name)`` pairs of locks, to renew."""


class ActClaims(Protocol):
    """Act claims, and the locks acts hold: what a process keeps under a lease it renews."""

    def claim(
        self,
        key: str,
        token: str,
        incident: str,
        ttl_s: float,
        lease_s: float,
        started: Started | None = None,
    ) -> ActState | None:
        """Claim ``key`` for ``token`` (None), or the state of whoever has it; durable first.

        ``started`` (a record and its retention) is written with the claim, in the same durable
        step, at rank :data:`host.store.records.STARTED`, only if this call takes the claim.
        """
        ...

    def state(self, key: str) -> ActState | None:
        """The act's state, or None if it was never claimed (or has expired)."""
        ...

    def record(self, key: str, token: str, incident: str, value: str, ttl_s: float) -> bool:
        """Record ``value`` for the claim ``token``, durably; False if another claim holds it."""
        ...

    def mark_lost(self, key: str, token: str, reason: str, ttl_s: float) -> None:
        """Say why the claim ``token`` has no result, unless it has one."""
        ...

    def renew(self, claims: Claims, lease_s: float) -> None:
        """Extend the leases of the unrecorded claims among ``claims``, lapsed ones too."""
        ...

    def take_lock(self, name: str, token: str, lease_s: float) -> bool:
        """Hold the lock ``name`` with ``token`` if it is free or its lease lapsed; whether so."""
        ...

    def release_lock(self, name: str, token: str) -> bool:
        """Free the lock ``name`` if ``token`` holds it; whether it did."""
        ...

    def renew_locks(self, locks: Claims, lease_s: float) -> None:
        """Extend the leases of the locks among ``locks`` that their tokens still hold."""
        ...


class Records(Protocol):
    """Records with a time to live, keyed by text."""

    def add(self, key: str, value: str, ttl_s: float) -> bool:
        """Insert unless a live record has ``key``; whether it did."""
        ...

    def get(self, key: str) -> str | None:
        """The live record's value, or None."""
        ...

    def put(self, key: str, value: str, ttl_s: float) -> None:
        """Insert or overwrite."""
        ...

    def delete(self, key: str) -> None:
        """Remove the record if there is one."""
        ...


class Queues(Protocol):
    """Queues of values handed between processes, and the watcher that wakes their waiters."""

    @property
    def watcher(self) -> Watcher:
        """Wakes this process's waiters on the keys that may have a value."""
        ...

    def push(self, key: str, value: str, ttl_s: float) -> None:
        """Append ``value``; the whole queue expires ``ttl_s`` after its last push."""
        ...

    def take(self, key: str) -> str | None:
        """Take the oldest live value now (once across all processes), or None."""
        ...


class Approvals(Protocol):
    """Remembered approvals, by id."""

    def grant(self, approval: Approval, ttl_s: float) -> None:
        """Keep ``approval`` for ``ttl_s``, replacing the one with its id."""
        ...

    def find(self, approval: str) -> Approval | None:
        """The live approval with this id, or None."""
        ...

    def listed(self, principal: str | None, tool: str | None) -> list[Approval]:
        """The live approvals of ``principal`` and ``tool`` (None: any), oldest first."""
        ...

    def revoke(self, approval: str | None, principal: str | None, tool: str | None) -> int:
        """Delete the live approvals matching every filter given; how many there were."""
        ...


class AuditLog(Protocol):
    """The store's audit chain: records appended with seq, prev and hash; read newest first.

    Each call's newest entry is its record; a write for a call with an entry of equal or higher
    rank appends nothing (:mod:`host.store.chain`).
    """

    chain: Chain

    def write(self, record: AuditRecord, rank: int, keep_s: float) -> bool:
        """Write ``record`` unless the call has one of equal or higher rank; whether it did."""
        ...

    def write_many(self, records: Sequence[tuple[AuditRecord, int]], keep_s: float) -> None:
        """:meth:`write` each of a non-empty batch, in order, in one transaction or round trip."""
        ...

    def started(self, record: AuditRecord, keep_s: float) -> None:
        """Keep ``record`` at rank ``STARTED``, durably across this process's death, at once."""
        ...

    def query(
        self, tool: str | None, principal: str | None, since: float | None, limit: int
    ) -> list[AuditRecord]:
        """The newest ``limit`` records matching every filter given, newest first."""
        ...

    def head_seq(self) -> int:
        """The seq of the chain's newest entry (0: none)."""
        ...

    def entries(self, after: int, limit: int) -> list[tuple[int, str, str]]:
        """Up to ``limit`` chain entries after seq ``after``, in order: ``(seq, body, hash)``."""
        ...

    def prune(self, before: float) -> int:
        """Delete the entries before the newest checkpoint older than ``before``; how many."""
        ...


class Requests(Protocol):
    """Approval requests, by id, and the bindings identical calls find them by."""

    def open(
        self, request: ApprovalRequest, ttl_s: float, most: int | None = None
    ) -> ApprovalRequest | None:
        """Keep ``request`` unless a live request holds its binding; the one that holds it.

        With ``most``, in the same atomic step: None (nothing kept) when the caller already
        has that many requests open (pending, not told, not voided, not expired).
        """
        ...

    def get(self, request_id: str) -> ApprovalRequest | None:
        """The live request with this id, or None."""
        ...

    def swap(self, new: ApprovalRequest, ttl_s: float) -> bool:
        """Write ``new`` over the stored version ``new.version - 1``; whether it did."""
        ...

    def release(self, binding: str, request_id: str) -> None:
        """Free ``binding`` if the request ``request_id`` holds it."""
        ...

    def listed(self) -> list[ApprovalRequest]:
        """Every live request, newest first."""
        ...


class Backend(Protocol):
    """One backend: its roles, and what it says of itself."""

    @property
    def acts(self) -> ActClaims:
        """Act claims and locks."""
        ...

    @property
    def records(self) -> Records:
        """Records."""
        ...

    @property
    def queues(self) -> Queues:
        """Queues."""
        ...

    @property
    def approvals(self) -> Approvals:
        """Remembered approvals."""
        ...

    @property
    def audit(self) -> AuditLog:
        """Audit records."""
        ...

    @property
    def requests(self) -> Requests:
        """Approval requests."""
        ...

    @property
    def places(self) -> Places:
        """Places."""
        ...

    @property
    def sessions(self) -> SessionRecords:
        """The pages' sign-in sessions."""
        ...

    @property
    def file(self) -> Path | None:
        """The database file of a store in one file (SQLite), else None."""
        ...

    def health(self) -> str | None:
        """None if the store is reachable and takes a real write now; else one line why not."""
        ...

    def durability(self) -> list[Risk]:
        """How this store can lose records (an empty list when it keeps them as promised)."""
        ...

    def close(self) -> None:
        """Stop the backend's threads and release its connections."""
        ...
