"""Queues in SQLite: one row per value, in push order; the watcher wakes who waits on them."""

from __future__ import annotations

import time

from host.store.sqlite.pool import Connections
from host.store.sqlite.sweep import Sweeping
from host.store.sqlite.watch import SqliteWatcher

__all__ = ["SCHEMA", "SqliteQueues"]

SCHEMA = """
CREATE TABLE IF NOT EXISTS store_queue (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    key TEXT NOT NULL,
    value TEXT NOT NULL,
    expires REAL NOT NULL
);
CREATE INDEX IF NOT EXISTS store_queue_key ON store_queue (key, id);
CREATE INDEX IF NOT EXISTS store_queue_expires ON store_queue (expires);
"""


class SqliteQueues:
    """The queues of one SQLite store.

    Args:
        pool: The store's connections, for reads.
        writes: The store's sweeping writes.
        watch_every_s: How often the watcher looks for pushed values while someone waits.
    """

    def __init__(self, pool: Connections, writes: Sweeping, watch_every_s: float) -> None:
        self._pool = pool
        self._writes = writes
        self.watcher = SqliteWatcher(pool, watch_every_s)

    def push(self, key: str, value: str, ttl_s: float) -> None:
        """Append ``value``; the whole queue expires ``ttl_s`` after its last push."""
        expires = time.time() + ttl_s
        with self._writes.write() as conn:
            conn.execute(
                "INSERT INTO store_queue (key, value, expires) VALUES (?, ?, ?)",
                (key, value, expires),
            )
            # Like a Redis key's expiry: the whole queue lives ttl_s after its last push.
            conn.execute("UPDATE store_queue SET expires = ? WHERE key = ?", (expires, key))

    def take(self, key: str) -> str | None:
        """Take the oldest live value of ``key`` now, or None: a read first, a write if found."""
        while True:
            with self._pool.connection() as conn:
                row = conn.execute(
                    "SELECT id, value FROM store_queue WHERE key = ? AND expires > ?"
                    " ORDER BY id LIMIT 1",
                    (key, time.time()),
                ).fetchone()
            if row is None:
                return None
            with self._writes.write() as conn:
                taken = conn.execute("DELETE FROM store_queue WHERE id = ?", (row[0],))
            if taken.rowcount == 1:
                return str(row[1])
            # another worker took it first; look again at once
