"""Audit records in SQLite: one row per call, written in one statement, read newest first.

A row's ``rank`` settles which of several writers for one call wins (see
:data:`host.store.records.ACTED`): the upsert replaces a row only with one of higher rank, in
the same statement, so concurrent writers need no read first.

NOTE: every call's last round writes a row, and each index costs that write about a fifth more;
so there are two besides the call id's: by time (every query, and pruning) and by tool. A query by
principal alone walks the time index newest first, which stops as soon as it has ``limit`` rows.
"""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Sequence
from pathlib import Path

from host.store.records import STARTED, AuditRecord
from host.store.sqlite.journal import Journal
from host.store.sqlite.pool import Connections
from host.store.sqlite.sweep import Role, Sweeping

__all__ = [
    "AUDIT_WAIT_S",
    "SCHEMA",
    "UPSERT",
    "SqliteAudit",
    "prune",
    "query",
    "row",
    "write",
    "write_many",
]

#: How long an audit record's write waits for another process's write lock. Writers hold it for
#: well under a millisecond; a lock held longer is a stuck writer, and the record is given up.
AUDIT_WAIT_S = 1.0

SCHEMA = """
CREATE TABLE IF NOT EXISTS store_audit (
    seq INTEGER PRIMARY KEY,   -- insertion order, a tie-break for records of the same time
    id TEXT NOT NULL UNIQUE,   -- the call's id
    at REAL NOT NULL,          -- Unix time the call ended
    principal TEXT NOT NULL,
    tool TEXT NOT NULL,
    rank INTEGER NOT NULL,
    body TEXT NOT NULL         -- AuditRecord.body()
);
CREATE INDEX IF NOT EXISTS store_audit_at ON store_audit (at);
CREATE INDEX IF NOT EXISTS store_audit_tool ON store_audit (tool, at);
"""


UPSERT = (
    "INSERT INTO store_audit (id, at, principal, tool, rank, body)"
    " VALUES (?, ?, ?, ?, ?, ?)"
    " ON CONFLICT (id) DO UPDATE SET at = excluded.at, principal = excluded.principal,"
    " tool = excluded.tool, rank = excluded.rank, body = excluded.body"
    " WHERE excluded.rank > store_audit.rank"
)


def row(record: AuditRecord, rank: int) -> tuple[str, float, str, str, int, str]:
    """The parameters of :data:`UPSERT` for ``record`` at ``rank``."""
    return (record.id, record.time, record.principal, record.tool, rank, record.body())


def write(conn: sqlite3.Connection, record: AuditRecord, rank: int) -> bool:
    """Insert ``record``, or replace the call's record if it has a lower rank; whether it did."""
    return conn.execute(UPSERT, row(record, rank)).rowcount == 1


def write_many(conn: sqlite3.Connection, records: Sequence[tuple[AuditRecord, int]]) -> None:
    """:func:`write` each record with its rank, in order, in one statement's prepared form."""
    conn.executemany(UPSERT, [row(record, rank) for record, rank in records])


def query(
    conn: sqlite3.Connection,
    tool: str | None,
    principal: str | None,
    since: float | None,
    limit: int,
) -> list[AuditRecord]:
    """The newest ``limit`` records matching every filter given, newest first."""
    # NOTE: a lost act's record, written before it ran, shows once its round could have ended.
    where = [f"(rank > {STARTED} OR at <= ?)"]
    params: list[str | float] = [time.time()]
    for column, value in (("tool", tool), ("principal", principal), ("at", since)):
        if value is not None:
            where.append(f"{column} >= ?" if column == "at" else f"{column} = ?")
            params.append(value)
    rows = conn.execute(
        "SELECT id, at, principal, tool, body FROM store_audit"
        f" WHERE {' AND '.join(where)} ORDER BY at DESC, seq DESC LIMIT ?",
        (*params, limit),
    ).fetchall()
    return [AuditRecord.from_body(*row) for row in rows]


def prune(conn: sqlite3.Connection, before: float) -> int:
    """Delete the records of calls that ended before ``before``; how many."""
    return int(conn.execute("DELETE FROM store_audit WHERE at < ?", (before,)).rowcount)


class SqliteAudit(Role):
    """The audit records of one SQLite store.

    NOTE: writes wait at most :data:`AUDIT_WAIT_S` for another process's write lock, not the
    usual busy timeout: a stuck writer must not hold every call's answer for that long.

    Args:
        pool: The store's connections.
        writes: The store's sweeping writes, for pruning.
    """

    def __init__(self, pool: Connections, writes: Sweeping) -> None:
        super().__init__(pool, writes)
        self._journal = Journal(Path(f"{pool.path}-acts"), self._replay)  # store.db-acts-*.log
        # NOTE: a store opened after a crash writes the records its dead workers left at once,
        # and every process's sweep looks for workers that die later.
        self._journal.sweep()
        self._journal.watch()

    def write(self, record: AuditRecord, rank: int, keep_s: float) -> bool:
        """Write ``record`` unless the call has one of equal or higher rank; whether it did."""
        with self._pool.write(wait_s=AUDIT_WAIT_S) as conn:
            return write(conn, record, rank)

    def started(self, record: AuditRecord, keep_s: float) -> None:
        """Keep a first round's act's record, durably, before it starts: in this process's
        journal, written into the table by whoever finds the process dead."""
        self._journal.append(record, keep_s)

    def _replay(self, records: list[tuple[AuditRecord, float]]) -> None:
        with self._pool.write(wait_s=AUDIT_WAIT_S) as conn:
            write_many(conn, [(record, STARTED) for record, _ in records])

    def close(self) -> None:
        """Stop the journal's sweep and let go of this process's journal files."""
        self._journal.close()

    def write_many(self, records: Sequence[tuple[AuditRecord, int]], keep_s: float) -> None:
        """Write each record with its rank, in order, in one transaction."""
        with self._pool.write(wait_s=AUDIT_WAIT_S) as conn:
            write_many(conn, records)

    def query(
        self, tool: str | None, principal: str | None, since: float | None, limit: int
    ) -> list[AuditRecord]:
        """The newest ``limit`` records matching every filter given, newest first."""
        with self._pool.connection() as conn:
            return query(conn, tool, principal, since, limit)

    def prune(self, before: float) -> int:
        """Delete the records of calls that ended before ``before``; how many."""
        with self._writes.write() as conn:
            return prune(conn, before)
