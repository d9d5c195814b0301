"""Approval requests in SQLite: one row per request, one per binding that points at it.

Opening a request and changing one are each one write transaction (``BEGIN IMMEDIATE``), so two
processes opening the same binding make one request, and a change is written only over the
version it was made from. Rows are kept until ``expires`` (the request's own expiry plus its
history time) and then swept (:mod:`host.store.sqlite.sweep`).
"""

from __future__ import annotations

import time

from host.store.requests import ApprovalRequest
from host.store.sqlite.sweep import Role

__all__ = ["SCHEMA", "SqliteRequests"]

SCHEMA = """
CREATE TABLE IF NOT EXISTS store_requests (
    id TEXT PRIMARY KEY,
    version INTEGER NOT NULL,
    created REAL NOT NULL,   -- Unix time
    body TEXT NOT NULL,      -- ApprovalRequest.to_json()
    expires REAL NOT NULL    -- Unix time: kept until then
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS store_requests_expires ON store_requests (expires);
CREATE TABLE IF NOT EXISTS store_request_bindings (
    binding TEXT PRIMARY KEY,
    id TEXT NOT NULL,
    expires REAL NOT NULL
) WITHOUT ROWID;
"""


#: How many requests of one caller are open: pending, not told, not voided, not expired.
_OPEN_OF_CALLER = """
SELECT count(*) FROM store_requests
 WHERE expires > ? AND json_extract(body, '$.caller') = ?
   AND json_extract(body, '$.state') = 'pending' AND json_extract(body, '$.expires') > ?
   AND NOT json_extract(body, '$.told') AND NOT json_extract(body, '$.voided')
"""


class SqliteRequests(Role):
    """The approval requests of one SQLite store."""

    def open(
        self, request: ApprovalRequest, ttl_s: float, most: int | None = None
    ) -> ApprovalRequest | None:
        """Keep ``request`` unless a live request holds its binding; the one that holds it.

        With ``most``: None when the caller has that many open already (counted in the same
        write transaction, so no two workers both take the last place).
        """
        now = time.time()
        with self._writes.write() as conn:
            row = conn.execute(
                "SELECT r.body FROM store_request_bindings b JOIN store_requests r ON r.id = b.id"
                " WHERE b.binding = ? AND b.expires > ? AND r.expires > ?",
                (request.binding, now, now),
            ).fetchone()
            if row is not None:
                return ApprovalRequest.from_json(row[0])
            if most is not None:
                (count,) = conn.execute(_OPEN_OF_CALLER, (now, request.caller, now)).fetchone()
                if count >= most:
                    return None
            conn.execute(
                "INSERT OR REPLACE INTO store_request_bindings (binding, id, expires)"
                " VALUES (?, ?, ?)",
                (request.binding, request.id, now + ttl_s),
            )
            conn.execute(
                "INSERT INTO store_requests (id, version, created, body, expires)"
                " VALUES (?, ?, ?, ?, ?)",
                (request.id, request.version, request.created, request.to_json(), now + ttl_s),
            )
        return request

    def get(self, request_id: str) -> ApprovalRequest | None:
        """The live request with this id, or None."""
        with self._pool.connection() as conn:
            row = conn.execute(
                "SELECT body FROM store_requests WHERE id = ? AND expires > ?",
                (request_id, time.time()),
            ).fetchone()
        return None if row is None else ApprovalRequest.from_json(row[0])

    def swap(self, new: ApprovalRequest, ttl_s: float) -> bool:
        """Write ``new`` over the stored version just before it; whether it did."""
        now = time.time()
        with self._writes.write() as conn:
            return (
                conn.execute(
                    "UPDATE store_requests SET version = ?, body = ?, expires = ?"
                    " WHERE id = ? AND version = ? AND expires > ?",
                    (new.version, new.to_json(), now + ttl_s, new.id, new.version - 1, now),
                ).rowcount
                == 1
            )

    def release(self, binding: str, request_id: str) -> None:
        """Free ``binding`` if the request ``request_id`` holds it."""
        with self._writes.write() as conn:
            conn.execute(
                "DELETE FROM store_request_bindings WHERE binding = ? AND id = ?",
                (binding, request_id),
            )

    def listed(self) -> list[ApprovalRequest]:
        """Every live request, newest first."""
        with self._pool.connection() as conn:
            rows = conn.execute(
                "SELECT body FROM store_requests WHERE expires > ? ORDER BY created DESC, id",
                (time.time(),),
            ).fetchall()
        return [ApprovalRequest.from_json(row[0]) for row in rows]
