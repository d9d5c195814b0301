"""Places in SQLite: one row per member of a group, expiring when last renewed plus its TTL."""

from __future__ import annotations

import time

from host.store.sqlite.sweep import Role

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


class SqlitePlaces(Role):
    """The places of one SQLite store."""

    def take(self, group: str, member: str, most: int | None, ttl_s: float) -> list[str]:
        """Count, evict and insert in one ``BEGIN IMMEDIATE`` transaction: never past ``most``."""
        now = time.time()
        evicted: list[str] = []
        with self._writes.write() as conn:
            if most is not None:
                # NOTE: the group's expired rows go now, not at the next sweep, so a group never
                # keeps more than ``most`` rows; the rest past the newest ``most - 1`` are evicted.
                conn.execute(
                    "DELETE FROM store_places WHERE grp = ? AND expires <= ?", (group, now)
                )
                evicted = [
                    row[0]
                    for row in conn.execute(
                        "SELECT member FROM store_places WHERE grp = ? AND member != ?"
                        " ORDER BY expires DESC, member DESC LIMIT -1 OFFSET ?",
                        (group, member, most - 1),
                    )
                ][::-1]
                conn.executemany(
                    "DELETE FROM store_places WHERE grp = ? AND member = ?",
                    [(group, gone) for gone in evicted],
                )
            conn.execute(
                "INSERT OR REPLACE INTO store_places (grp, member, expires) VALUES (?, ?, ?)",
                (group, member, now + ttl_s),
            )
        return evicted

    def renew(self, group: str, member: str, ttl_s: float) -> bool:
        """Move a live row's expiry; an evicted or expired member stays gone."""
        now = time.time()
        with self._writes.write() as conn:
            renewed = conn.execute(
                "UPDATE store_places SET expires = ? WHERE grp = ? AND member = ? AND expires > ?",
                (now + ttl_s, group, member, now),
            ).rowcount
        return renewed > 0

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
