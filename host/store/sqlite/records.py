"""Records in SQLite: one row per key, with the Unix time it expires."""

from __future__ import annotations

import time

from host.store.sqlite.sweep import Role

__all__ = ["SCHEMA", "SqliteRecords"]

SCHEMA = """
CREATE TABLE IF NOT EXISTS store_records (
    key TEXT PRIMARY KEY,
    value TEXT,
    owner TEXT,            -- unused since act claims have their own table; kept for old files
    expires REAL NOT NULL  -- Unix time
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS store_records_expires ON store_records (expires);
"""


class SqliteRecords(Role):
    """The records of one SQLite store."""

    def add(self, key: str, value: str, ttl_s: float) -> bool:
        """Insert unless a live row has ``key``, in one upsert; whether it did."""
        now = time.time()
        with self._writes.write() as conn:
            cursor = conn.execute(
                "INSERT INTO store_records (key, value, owner, expires) VALUES (?, ?, NULL, ?)"
                " ON CONFLICT (key) DO UPDATE SET value = excluded.value, owner = NULL,"
                " expires = excluded.expires WHERE store_records.expires <= ?",
                (key, value, now + ttl_s, now),
            )
            return cursor.rowcount == 1

    def get(self, key: str) -> str | None:
        """The live value for ``key``, or None."""
        with self._pool.connection() as conn:
            row = conn.execute(
                "SELECT value FROM store_records WHERE key = ? AND expires > ?",
                (key, time.time()),
            ).fetchone()
        return None if row is None else row[0]

    def put(self, key: str, value: str, ttl_s: float) -> None:
        """Insert or overwrite."""
        with self._writes.write() as conn:
            conn.execute(
                "INSERT OR REPLACE INTO store_records (key, value, owner, expires)"
                " VALUES (?, ?, NULL, ?)",
                (key, value, time.time() + ttl_s),
            )

    def delete(self, key: str) -> None:
        """Remove the row if there is one."""
        with self._writes.write() as conn:
            conn.execute("DELETE FROM store_records WHERE key = ?", (key,))
