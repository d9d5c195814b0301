"""Act claims of one process committed together: one fsync for every claim waiting at once.

A claim must be on disk (``synchronous = FULL``) before its act starts, and an fsync is the
costliest thing a call does; the writers of a process already take turns, so while one claim's
transaction waits on the disk, the claims of other threads queue behind it. Group commit turns
that queue into the next transaction: the thread whose claim finds no transaction under way leads,
commits every claim queued by then in one transaction (each its own ``INSERT``, so each is decided
as if alone, in the order they came), and hands the lead to the first claim queued meanwhile.
Nobody waits for a timer: alone, a claim commits at once, as before.

If the transaction fails, every claim in it fails with the same :class:`host.errors.StoreError`:
none was made, and each caller reports the store unavailable, as a lone claim would.
"""

from __future__ import annotations

import os
import threading
from dataclasses import dataclass, field

from host.errors import StoreError
from host.store import sqlite_acts
from host.store.base import ActState
from host.store.sqlite_pool import Connections

__all__ = ["ClaimQueue"]


@dataclass(eq=False)
class _Claim:
    key: str
    token: str
    incident: str
    ttl_s: float
    lease_s: float
    settled: threading.Event = field(default_factory=threading.Event)
    lead: bool = False
    found: ActState | None = None
    error: StoreError | None = None

    def outcome(self) -> ActState | None:
        if self.error is not None:
            raise self.error
        return self.found


class ClaimQueue:
    """Claims act keys in the store's file, many claims per transaction when they come together.

    Args:
        pool: The store's connections.
    """

    def __init__(self, pool: Connections) -> None:
        self._pool = pool
        self._reset()

    def _reset(self) -> None:
        self._pid = os.getpid()
        self._lock = threading.Lock()
        self._queued: list[_Claim] = []
        self._leading = False

    def claim(
        self, key: str, token: str, incident: str, ttl_s: float, lease_s: float
    ) -> ActState | None:
        """Claim ``key`` for ``token`` (None), or the state of the live claim that has it.

        Raises:
            StoreError: The transaction that carried it failed; nothing was claimed.
        """
        if os.getpid() != self._pid:
            self._reset()  # NOTE: a thread of the parent may have been leading at the fork
        mine = _Claim(key, token, incident, ttl_s, lease_s)
        with self._lock:
            self._queued.append(mine)
            if not self._leading:
                self._leading = mine.lead = True
        if not mine.lead:
            mine.settled.wait()
            if not mine.lead:
                return mine.outcome()
        with self._lock:
            batch, self._queued = self._queued, []
        try:
            self._commit(batch)
        finally:
            with self._lock:
                if self._queued:
                    following = self._queued[0]
                    following.lead = True
                    following.settled.set()
                else:
                    self._leading = False
        return mine.outcome()

    def _commit(self, batch: list[_Claim]) -> None:
        try:
            with self._pool.write(durable=True) as conn:
                found = [
                    sqlite_acts.claim(conn, c.key, c.token, c.incident, c.ttl_s, c.lease_s)
                    for c in batch
                ]
        except Exception as exc:  # every waiter must hear of it, or it would wait forever
            error = exc if isinstance(exc, StoreError) else StoreError(f"claiming failed: {exc}")
            for claim in batch:
                claim.error = error
        else:
            for claim, state in zip(batch, found, strict=True):
                claim.found = state
        for claim in batch:
            if not claim.lead:
                claim.settled.set()
