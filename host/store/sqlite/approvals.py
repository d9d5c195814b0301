"""Remembered approvals in SQLite: one row per approval id, read only while it has not expired.

Each step is one statement. Expired rows are never read, and the sweep deletes them
(:mod:`host.store.sqlite.sweep`).
"""

from __future__ import annotations

import time

from host.store.records import Approval
from host.store.sqlite.sweep import Role

__all__ = ["SCHEMA", "SqliteApprovals"]

SCHEMA = """
CREATE TABLE IF NOT EXISTS store_approvals (
    id TEXT PRIMARY KEY,     -- approval_id(principal, tool, question, key)
    principal TEXT NOT NULL,
    tool TEXT NOT NULL,
    question TEXT NOT NULL,
    key TEXT NOT NULL,
    granted REAL NOT NULL,   -- Unix time
    expires REAL NOT NULL    -- Unix time
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS store_approvals_expires ON store_approvals (expires);
"""

_COLUMNS = "id, principal, tool, question, key, granted, expires"


class SqliteApprovals(Role):
    """The approvals of one SQLite store."""

    def grant(self, approval: Approval, ttl_s: float) -> None:
        """Insert ``approval``, or replace the one with its id (a new yes starts a new duration)."""
        row = (
            approval.id,
            approval.principal,
            approval.tool,
            approval.question,
            approval.key,
            approval.granted,
            approval.expires,
        )
        with self._writes.write() as conn:
            conn.execute(
                f"INSERT OR REPLACE INTO store_approvals ({_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?)",
                row,
            )

    def find(self, approval: str) -> Approval | None:
        """The live approval with id ``approval``, or None."""
        with self._pool.connection() as conn:
            row = conn.execute(
                f"SELECT {_COLUMNS} FROM store_approvals WHERE id = ? AND expires > ?",
                (approval, time.time()),
            ).fetchone()
        return None if row is None else Approval(*row)

    def listed(self, principal: str | None, tool: str | None) -> list[Approval]:
        """The live approvals of ``principal`` and ``tool`` (None: any), oldest first."""
        where, params = _where(principal, tool)
        with self._pool.connection() as conn:
            rows = conn.execute(
                f"SELECT {_COLUMNS} FROM store_approvals WHERE expires > ?{where}"
                " ORDER BY granted, id",
                (time.time(), *params),
            ).fetchall()
        return [Approval(*row) for row in rows]

    def revoke(self, approval: str | None, principal: str | None, tool: str | None) -> int:
        """Delete the live approvals matching every filter given; how many there were."""
        where, params = _where(principal, tool)
        if approval is not None:
            where += " AND id = ?"
            params.append(approval)
        with self._writes.write() as conn:
            return int(
                conn.execute(
                    f"DELETE FROM store_approvals WHERE expires > ?{where}",
                    (time.time(), *params),
                ).rowcount
            )


def _where(principal: str | None, tool: str | None) -> tuple[str, list[str]]:
    where, params = "", []
    if principal is not None:
        where += " AND principal = ?"
        params.append(principal)
    if tool is not None:
        where += " AND tool = ?"
        params.append(tool)
    return where, params
