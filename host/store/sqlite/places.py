"""Places in SQLite: one row per member of a group, with the Unix time it expires."""

from __future__ import annotations

import time

from host.store.sqlite.pool import Connections
from host.store.sqlite.sweep import Sweeping

__all__ = ["SCHEMA", "SqlitePlaces"]

SCHEMA = """
CREATE TABLE IF NOT EXISTS store_places (
    grp TEXT NOT NULL,
    member TEXT NOT NULL,
    expires REAL NOT NULL,  -- Unix time
    PRIMARY KEY (grp, member)
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS store_places_expires ON store_places (expires);
"""


class SqlitePlaces:
    """The places of one SQLite store.

    Args:
        pool: The store's connections, for reads.
        writes: The store's sweeping writes.
    """

    def __init__(self, pool: Connections, writes: Sweeping) -> None:
        self._pool = pool
        self._writes = writes

    def take(self, group: str, member: str, most: int | None, ttl_s: float) -> float | None:
        """Count and insert in one ``BEGIN IMMEDIATE`` transaction, so no two workers both fit."""
        now = time.time()
        with self._writes.write() as conn:
            if most is not None:
                count, oldest = conn.execute(
                    "SELECT COUNT(*), MIN(expires) FROM store_places"
                    " WHERE grp = ? AND expires > ? AND member != ?",
                    (group, now, member),
                ).fetchone()
                if count >= most:
                    return max(float(oldest) - now, 0.0)
            conn.execute(
                "INSERT OR REPLACE INTO store_places (grp, member, expires) VALUES (?, ?, ?)",
                (group, member, now + ttl_s),
            )
        return None

    def holds(self, group: str, member: str) -> bool:
        """Whether a live row has ``group`` and ``member``."""
        with self._pool.connection() as conn:
            row = conn.execute(
                "SELECT 1 FROM store_places WHERE grp = ? AND member = ? AND expires > ?",
                (group, member, time.time()),
            ).fetchone()
        return row is not None

    def give(self, group: str, member: str) -> None:
        """Delete the row if there is one."""
        with self._writes.write() as conn:
            conn.execute("DELETE FROM store_places WHERE grp = ? AND member = ?", (group, member))
