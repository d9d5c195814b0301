"""Expired rows in the SQLite store: invisible at once, deleted now and then by a write.

Every read asks for live rows only (``expires > now``), so an expired row is never seen; deleting
them is housekeeping, done inside an ordinary write at most once per ``every_s`` so that no reader
and no timer thread pays for it.
"""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Iterator
from contextlib import contextmanager

from host.store.sqlite.pool import Connections

__all__ = ["Role", "Sweeping"]

_SWEPT = (
    "store_records",
    "store_queue",
    "store_acts",
    "store_approvals",
    "store_requests",
    "store_request_bindings",
    "store_places",
    "store_sessions",
)
"""The tables whose rows have an ``expires`` time."""


class Sweeping:
    """Write transactions that also delete expired rows now and then.

    Args:
        pool: The store's connections.
        every_s: How often (at most) a write also deletes expired rows.
    """

    def __init__(self, pool: Connections, every_s: float) -> None:
        self._pool = pool
        self._every_s = every_s
        self._next = 0.0

    @contextmanager
    def write(self) -> Iterator[sqlite3.Connection]:
        """A write transaction (see :meth:`Connections.write`) that also sweeps now and then."""
        with self._pool.write() as conn:
            yield conn
            self._maybe_sweep(conn)

    def _maybe_sweep(self, conn: sqlite3.Connection) -> None:
        if time.monotonic() < self._next:
            return
        self._next = time.monotonic() + self._every_s
        now = time.time()
        for table in _SWEPT:
            conn.execute(f"DELETE FROM {table} WHERE expires <= ?", (now,))


class Role:
    """A role of one SQLite store: its connections for reads, its sweeping writes for writes.

    Args:
        pool: The store's connections, for reads.
        writes: The store's sweeping writes.
    """

    def __init__(self, pool: Connections, writes: Sweeping) -> None:
        self._pool = pool
        self._writes = writes
