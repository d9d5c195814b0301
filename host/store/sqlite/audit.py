"""Audit records in SQLite: the store's chain of entries, appended in the writer's transaction.

Every record is one row of ``store_audit_chain``, keyed by its ``seq``; a call whose record is
replaced (see :data:`host.store.records.ACTED`) gets a new row, and readers see the newest row of
each call. Rows are only ever appended: the transaction that appends reads the chain's head and
each call's newest rank first, under the write lock, so the sequence has no gap across processes
(:mod:`host.store.chain`).

NOTE: every call's last round writes a row, and each index costs that write about a fifth more;
so there are three besides the primary key: by call id (the rank check and the newest row of a
call), by time (every query) and by tool, and a partial one for the few checkpoints.
"""

from __future__ import annotations

import json
import sqlite3
import time
from collections.abc import Iterable, Sequence
from pathlib import Path

from host.store.chain import Chain, Head, Link, Prepared, prepare
from host.store.records import STARTED, AuditRecord
from host.store.sqlite.journal import Journal
from host.store.sqlite.pool import Connections
from host.store.sqlite.sweep import Role, Sweeping

__all__ = [
    "AUDIT_WAIT_S",
    "SCHEMA",
    "SqliteAudit",
    "append",
    "chain_rows",
    "head",
    "prune",
    "query",
]

#: How long an audit record's write waits for another process's write lock. Writers hold it for
#: well under a millisecond; a lock held longer is a stuck writer, and the write fails.
AUDIT_WAIT_S = 1.0

SCHEMA = """
CREATE TABLE IF NOT EXISTS store_audit_chain (
    seq INTEGER PRIMARY KEY,   -- the chain's sequence: 1, 2, 3, ... with no gap
    id TEXT NOT NULL,          -- the call's id (a decision's, a checkpoint's)
    at REAL NOT NULL,          -- Unix time the call ended
    principal TEXT NOT NULL,
    tool TEXT NOT NULL,
    rank INTEGER NOT NULL,
    kind TEXT NOT NULL,
    body TEXT NOT NULL,        -- the entry's canonical JSON (RFC 8785), with seq and prev
    hash TEXT NOT NULL         -- SHA-256 of body
);
CREATE INDEX IF NOT EXISTS store_audit_chain_id ON store_audit_chain (id, seq);
CREATE INDEX IF NOT EXISTS store_audit_chain_at ON store_audit_chain (at);
CREATE INDEX IF NOT EXISTS store_audit_chain_tool ON store_audit_chain (tool, at);
CREATE INDEX IF NOT EXISTS store_audit_chain_cp ON store_audit_chain (seq)
    WHERE kind = 'checkpoint';
-- The chain's head, kept apart from its rows (as Redis keeps its own), so that deleting the
-- newest entries leaves a head that no row reaches: host audit verify names them.
CREATE TABLE IF NOT EXISTS store_audit_head (
    one INTEGER PRIMARY KEY CHECK (one = 1),
    seq INTEGER NOT NULL,
    hash TEXT NOT NULL
);
"""

#: NOTE: the columns in :class:`~host.store.chain.Link`'s order: each link is its own row.
_INSERT = (
    "INSERT INTO store_audit_chain (seq, hash, body, rank, kind, id, at, principal, tool)"
    " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)"
)


_HEAD = (
    "INSERT INTO store_audit_head (one, seq, hash) VALUES (1, ?, ?)"
    " ON CONFLICT (one) DO UPDATE SET seq = excluded.seq, hash = excluded.hash"
)
#: NOTE: a head read under the write lock is still there: updated in place, not upserted.
_MOVE = "UPDATE store_audit_head SET seq = ?, hash = ? WHERE one = 1"


def head(conn: sqlite3.Connection, known: Head | None = None) -> Head:
    """The chain's newest entry (as its kept head says) and newest checkpoint.

    NOTE: a store written before the head was kept has none: its newest row is the head then.
    """
    last = conn.execute("SELECT seq, hash FROM store_audit_head WHERE one = 1").fetchone()
    return _head(conn, last, known)


def _head(conn: sqlite3.Connection, last: tuple[int, str] | None, known: Head | None) -> Head:
    """The head whose kept seq and hash are ``last`` (``None``: no head kept), checkpoint added.

    NOTE: a head ``known`` with the same seq and hash is the same chain (the hash is of every
    entry up to it, checkpoints included), so its checkpoint is taken without reading it again:
    the head a process linked last is most often still the head at its next write.
    """
    if last is None:
        last = conn.execute(
            "SELECT seq, hash FROM store_audit_chain ORDER BY seq DESC LIMIT 1"
        ).fetchone()
    if last is None:
        return Head()
    if known is not None and known.seq == last[0] and known.hash == last[1]:
        return known
    cp = conn.execute(
        "SELECT seq, at FROM store_audit_chain WHERE kind = 'checkpoint' ORDER BY seq DESC LIMIT 1"
    ).fetchone()
    return Head(int(last[0]), str(last[1]), *((int(cp[0]), float(cp[1])) if cp else (0, None)))


def append(
    conn: sqlite3.Connection, chain: Chain, records: Sequence[Prepared], now: float
) -> list[Link]:
    """Append each record whose call has none of equal or higher rank; the entries appended.

    Call it inside a write transaction: the head and the ranks it reads must not move.
    """
    last, ranks = _read(conn, sorted({p.record.id for p in records}))
    kept: list[Prepared] = []
    for prepared in records:
        call = prepared.record.id
        current = ranks.get(call)
        if current is not None and current >= prepared.rank:
            continue
        ranks[call] = prepared.rank
        kept.append(prepared)
    if not kept:
        return []
    links = chain.link(_head(conn, last, chain.linked), kept, now)
    conn.executemany(_INSERT, links)
    conn.execute(_HEAD if last is None else _MOVE, (links[-1].seq, links[-1].hash))
    return links


#: Rows of the kept head (its id NULL) and of each call's newest entry, in one statement:
#: ``max(seq)`` makes the bare ``rank`` the newest entry's (SQLite's rule for a bare column
#: beside min() or max()), whatever order the rows come in.
_READ = (
    "SELECT NULL, seq, hash FROM store_audit_head WHERE one = 1 UNION ALL"
    " SELECT id, rank, max(seq) FROM store_audit_chain WHERE id IN ({}) GROUP BY id"
)
_RANKS = "SELECT id, rank, max(seq) FROM store_audit_chain WHERE id IN ({}) GROUP BY id"
_CHUNK = 500
#: The same for a batch of one call (most are; an act's claim always): one row, whatever is
#: found. NOTE: one statement with scalar subqueries, not two (or a UNION and a GROUP BY, which
#: cost SQLite what they saved Python): about 11k instructions a batch less.
_ONE = (
    "SELECT (SELECT seq FROM store_audit_head WHERE one = 1),"
    " (SELECT hash FROM store_audit_head WHERE one = 1),"
    " (SELECT rank FROM store_audit_chain WHERE id = ? ORDER BY seq DESC LIMIT 1)"
)


def _read(
    conn: sqlite3.Connection, calls: list[str]
) -> tuple[tuple[int, str] | None, dict[str, int]]:
    """The kept head's seq and hash (``None``: none kept), and the rank of each call's newest
    entry, for the calls that have one."""
    if len(calls) == 1:
        seq, hash_, rank = conn.execute(_ONE, calls).fetchone()
        return (None if seq is None else (seq, hash_)), ({} if rank is None else {calls[0]: rank})
    last: tuple[int, str] | None = None
    found: dict[str, int] = {}
    for start in range(0, max(len(calls), 1), _CHUNK):
        chunk = calls[start : start + _CHUNK]
        sql = _READ if start == 0 else _RANKS
        for call, rank, seq in conn.execute(sql.format(",".join("?" * len(chunk))), chunk):
            if call is None:
                last = (int(rank), str(seq))
            else:
                found[str(call)] = int(rank)
    return last, found


def query(
    conn: sqlite3.Connection,
    tool: str | None,
    principal: str | None,
    since: float | None,
    limit: int,
) -> list[AuditRecord]:
    """The newest ``limit`` records matching every filter given, newest first (each call's
    newest entry; checkpoints left out)."""
    # NOTE: a lost act's record, written before it ran, shows once its round could have ended.
    where = ["kind != 'checkpoint'", f"(rank > {STARTED} OR at <= ?)"]
    params: list[str | float] = [time.time()]
    for column, value in (("tool", tool), ("principal", principal), ("at", since)):
        if value is not None:
            where.append(f"{column} >= ?" if column == "at" else f"{column} = ?")
            params.append(value)
    where.append(
        "NOT EXISTS (SELECT 1 FROM store_audit_chain n WHERE n.id = a.id AND n.seq > a.seq)"
    )
    rows = conn.execute(
        "SELECT body, hash, at FROM store_audit_chain a"
        f" WHERE {' AND '.join(where)} ORDER BY at DESC, seq DESC LIMIT ?",
        (*params, limit),
    ).fetchall()
    return [AuditRecord.from_entry(json.loads(body), hash_, at) for body, hash_, at in rows]


def chain_rows(conn: sqlite3.Connection, after: int, limit: int) -> list[tuple[int, str, str]]:
    """Up to ``limit`` entries after seq ``after``, in order: ``(seq, body, hash)``."""
    rows = conn.execute(
        "SELECT seq, body, hash FROM store_audit_chain WHERE seq > ? ORDER BY seq LIMIT ?",
        (after, limit),
    ).fetchall()
    return [(int(seq), str(body), str(hash_)) for seq, body, hash_ in rows]


def prune(conn: sqlite3.Connection, before: float) -> int:
    """Delete the entries before the newest checkpoint older than ``before``; how many.

    The chain then starts at that checkpoint, so it stays verifiable.
    """
    cut = conn.execute(
        "SELECT MAX(seq) FROM store_audit_chain WHERE kind = 'checkpoint' AND at < ?", (before,)
    ).fetchone()[0]
    if cut is None:
        return 0
    return int(conn.execute("DELETE FROM store_audit_chain WHERE seq < ?", (cut,)).rowcount)


_OLD_TABLE = "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'store_audit'"


def migrate(conn: sqlite3.Connection, chain: Chain) -> int:
    """Chain the records of a store written before the chain (table ``store_audit``), once."""
    if not conn.execute(_OLD_TABLE).fetchone():
        return 0
    rows: Iterable[tuple[str, float, str, str, int, str]] = conn.execute(
        "SELECT id, at, principal, tool, rank, body FROM store_audit ORDER BY seq"
    ).fetchall()
    records = [
        prepare(AuditRecord.from_body(call, at, who, tool, body), rank)
        for call, at, who, tool, rank, body in rows
    ]
    appended = append(conn, chain, records, time.time()) if records else []
    conn.execute("DROP TABLE store_audit")
    return len(appended)


class SqliteAudit(Role):
    """The audit chain of one SQLite store.

    NOTE: writes wait at most :data:`AUDIT_WAIT_S` for another process's write lock, not the
    usual busy timeout: a stuck writer must not hold every call's answer for that long.

    Args:
        pool: The store's connections.
        writes: The store's sweeping writes, for pruning.
    """

    def __init__(self, pool: Connections, writes: Sweeping) -> None:
        super().__init__(pool, writes)
        self.chain = Chain()
        with self._pool.connection() as conn:
            old = conn.execute(_OLD_TABLE).fetchone()
        if old:
            with self._pool.write() as conn:
                migrate(conn, self.chain)
        self._journal = Journal(Path(f"{pool.path}-acts"), self._replay)  # store.db-acts-*.log
        # NOTE: a store opened after a crash writes the records its dead workers left at once,
        # and every process's sweep looks for workers that die later.
        self._journal.sweep()
        self._journal.watch()

    def write(self, record: AuditRecord, rank: int, keep_s: float) -> bool:
        """Append ``record`` unless the call has one of equal or higher rank; whether it did."""
        prepared = [prepare(record, rank)]
        with self._pool.write(wait_s=AUDIT_WAIT_S) as conn:
            return bool(append(conn, self.chain, prepared, time.time()))

    def started(self, record: AuditRecord, keep_s: float) -> None:
        """Keep a first round's act's record, durably, before it starts: in this process's
        journal, written into the chain by whoever finds the process dead."""
        self._journal.append(record, keep_s)

    def _replay(self, records: list[tuple[AuditRecord, float]]) -> None:
        self.write_many([(record, STARTED) for record, _ in records], 0.0)

    def close(self) -> None:
        """Stop the journal's sweep and let go of this process's journal files."""
        self._journal.close()

    def write_many(self, records: Sequence[tuple[AuditRecord, int]], keep_s: float) -> None:
        """Append each record with its rank, in order, in one transaction."""
        # NOTE: the entries' JSON is made before the write lock is taken, not while holding it.
        prepared = [prepare(record, rank) for record, rank in records]
        with self._pool.write(wait_s=AUDIT_WAIT_S) as conn:
            append(conn, self.chain, prepared, time.time())

    def query(
        self, tool: str | None, principal: str | None, since: float | None, limit: int
    ) -> list[AuditRecord]:
        """The newest ``limit`` records matching every filter given, newest first."""
        with self._pool.connection() as conn:
            return query(conn, tool, principal, since, limit)

    def head_seq(self) -> int:
        """The seq of the chain's newest entry (0: none)."""
        with self._pool.connection() as conn:
            return head(conn).seq

    def entries(self, after: int, limit: int) -> list[tuple[int, str, str]]:
        """Up to ``limit`` chain entries after seq ``after``, in order."""
        with self._pool.connection() as conn:
            return chain_rows(conn, after, limit)

    def prune(self, before: float) -> int:
        """Delete the entries before the newest checkpoint older than ``before``; how many."""
        with self._writes.write() as conn:
            return prune(conn, before)
