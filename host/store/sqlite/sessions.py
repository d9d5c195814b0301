"""The pages' sessions in SQLite: one row per session key, read only while it has not expired."""

from __future__ import annotations

import time
from collections.abc import Sequence

from host.store.sessions import PageSession
from host.store.sqlite.sweep import Role

__all__ = ["SCHEMA", "SqliteSessions"]

SCHEMA = """
CREATE TABLE IF NOT EXISTS store_sessions (
    key TEXT PRIMARY KEY,    -- session_key(the id in the cookie)
    principal TEXT NOT NULL,
    body TEXT NOT NULL,      -- PageSession.to_json()
    expires REAL NOT NULL    -- Unix time
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS store_sessions_principal ON store_sessions (principal);
"""


class SqliteSessions(Role):
    """The sessions of one SQLite store."""

    def open(self, session: PageSession, ttl_s: float) -> None:
        """Insert ``session`` (a new id each time: nothing to replace)."""
        with self._writes.write() as conn:
            conn.execute(
                "INSERT OR REPLACE INTO store_sessions (key, principal, body, expires)"
                " VALUES (?, ?, ?, ?)",
                (session.key, session.principal, session.to_json(), time.time() + ttl_s),
            )

    def get(self, key: str) -> PageSession | None:
        """The live session under ``key``, or None."""
        with self._pool.connection() as conn:
            row = conn.execute(
                "SELECT body FROM store_sessions WHERE key = ? AND expires > ?",
                (key, time.time()),
            ).fetchone()
        return None if row is None else PageSession.from_json(key, row[0])

    def listed(self, principal: str | None) -> list[PageSession]:
        """The live sessions of ``principal`` (None: all), oldest first."""
        where, params = ("", ()) if principal is None else (" AND principal = ?", (principal,))
        with self._pool.connection() as conn:
            rows = conn.execute(
                f"SELECT key, body FROM store_sessions WHERE expires > ?{where}",
                (time.time(), *params),
            ).fetchall()
        found = [PageSession.from_json(key, body) for key, body in rows]
        return sorted((s for s in found if s is not None), key=lambda s: (s.created, s.key))

    def end(self, keys: Sequence[str]) -> int:
        """Delete the sessions under ``keys``; how many were live."""
        marks = ", ".join("?" for _ in keys)
        with self._writes.write() as conn:
            return int(
                conn.execute(
                    f"DELETE FROM store_sessions WHERE expires > ? AND key IN ({marks})",
                    (time.time(), *keys),
                ).rowcount
            )
