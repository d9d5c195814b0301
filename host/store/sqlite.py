"""The shared store in one SQLite file, for every worker process of one machine.

WAL mode lets readers go on while one writer commits; every claim is made in a ``BEGIN IMMEDIATE``
transaction, so two processes cannot both see a key free and both take it. Act claims and their
results are committed with ``synchronous = FULL`` (they survive a power loss), those written at the
same moment by a worker's threads together (:mod:`host.store.sqlite_durable`); other records with
``NORMAL`` (they survive a crash of the process). Connections, file modes
and the check that the file is still the one opened live in :mod:`host.store.sqlite_pool`; act
claims' SQL in :mod:`host.store.sqlite_acts`, approvals' in :mod:`host.store.sqlite_approvals`,
audit records' in :mod:`host.store.sqlite_audit`; waking waiting ``pop`` callers in
:mod:`host.store.sqlite_watch`.
"""

from __future__ import annotations

import logging
import os
import sqlite3
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

from host.errors import StoreError
from host.store import sqlite_acts, sqlite_approvals, sqlite_audit
from host.store.acts import HeldClaim, check_claim, new_token, wait_until_settled
from host.store.base import DEFAULT_LEASE_S, ActClaim, ActState, Risk, check_ttl
from host.store.leases import LeaseKeeper
from host.store.records import Approval, AuditRecord, check_filters, check_limit, check_revoke
from host.store.sqlite_durable import DurableWrites
from host.store.sqlite_pool import Connections
from host.store.sqlite_watch import SqliteWatcher
from host.store.waiting import pop_waiting

__all__ = ["AUDIT_WAIT_S", "SqliteStore"]

log = logging.getLogger("host.store")

#: How long a health probe waits for the write lock before calling the store unwritable.
HEALTH_WAIT_S = 0.5

#: How long an audit record's write waits for another process's write lock. Writers hold it for
#: well under a millisecond; a lock held longer is a stuck writer, and the record is given up.
AUDIT_WAIT_S = 1.0

_SCHEMA = """
CREATE TABLE IF NOT EXISTS store_records (
    key TEXT PRIMARY KEY,
    value TEXT,
    owner TEXT,            -- unused since act claims have their own table; kept for old files
    expires REAL NOT NULL  -- Unix time
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS store_records_expires ON store_records (expires);
CREATE TABLE IF NOT EXISTS store_queue (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    key TEXT NOT NULL,
    value TEXT NOT NULL,
    expires REAL NOT NULL
);
CREATE INDEX IF NOT EXISTS store_queue_key ON store_queue (key, id);
CREATE INDEX IF NOT EXISTS store_queue_expires ON store_queue (expires);
"""


class SqliteStore:
    """A :class:`host.store.base.Store` in one SQLite file shared by all processes.

    Args:
        path: The database file; its folder is created (0700) if missing, the file 0600.
        busy_timeout_s: How long one statement waits for another process's write lock.
        sweep_every_s: How often (at most) a write also deletes expired rows.
        lease_s: How long an act claim lasts without renewal (see
            :data:`host.store.base.DEFAULT_LEASE_S`).
        watch_every_s: How often the watcher looks for pushed values while someone waits.

    Raises:
        host.errors.StoreError: The file cannot be opened or is not a usable database.
    """

    def __init__(
        self,
        path: str | Path,
        *,
        busy_timeout_s: float = 10.0,
        sweep_every_s: float = 30.0,
        lease_s: float = DEFAULT_LEASE_S,
        watch_every_s: float = 0.02,
    ) -> None:
        check_ttl(lease_s, "lease_s")
        self.path = Path(path)
        self.lease_s = lease_s
        self._sweep_every_s = sweep_every_s
        self._next_sweep = 0.0
        self._pool = Connections(self.path, busy_timeout_s)
        with self._pool.connection() as conn:
            # executescript() runs the text as is, so this is one transaction of its own.
            conn.executescript(
                "BEGIN IMMEDIATE;"
                + _SCHEMA
                + sqlite_acts.SCHEMA
                + sqlite_approvals.SCHEMA
                + sqlite_audit.SCHEMA
                + "COMMIT;"
            )
        self._keeper = LeaseKeeper(self._renew, lease_s, repr(self))
        self._durable = DurableWrites(self._pool)
        self._watcher = SqliteWatcher(self._pool, watch_every_s)

    def __repr__(self) -> str:
        return f"SqliteStore({str(self.path)!r})"

    # -- act claims ------------------------------------------------------------------------------

    def claim_act(self, key: str, *, ttl_s: float, incident: str) -> ActClaim | ActState:
        """Claim an act or say what became of it; see :meth:`host.store.base.Store.claim_act`."""
        check_claim(key, ttl_s, incident)
        token = new_token()
        found = self._durable.run(
            lambda conn: sqlite_acts.claim(conn, key, token, incident, ttl_s, self.lease_s)
        )
        if found is not None:
            return found
        self._keeper.hold(token, key)

        def write(value: str) -> None:
            if not self._durable.run(
                lambda conn: sqlite_acts.record(conn, key, token, incident, value, ttl_s)
            ):
                raise StoreError(
                    f"the claim on act {key!r} expired and was taken again before its "
                    f"result was recorded; ttl_s={ttl_s:g} is shorter than the act ran"
                )

        def mark_lost(reason: str) -> None:
            with self._pool.write() as conn:
                sqlite_acts.mark_lost(conn, key, token, reason, ttl_s)

        return HeldClaim(key, incident, token, write, mark_lost, self._keeper)

    def act_state(self, key: str) -> ActState | None:
        """What became of an act; see :meth:`host.store.base.Store.act_state`."""
        with self._pool.connection() as conn:
            return sqlite_acts.state(conn, key)

    def wait_act(self, key: str, timeout_s: float) -> ActState | None:
        """Wait for an act to end; see :meth:`host.store.base.Store.wait_act`."""
        return wait_until_settled(lambda: self.act_state(key), timeout_s)

    def _renew(self, claims: list[tuple[str, str]]) -> None:
        with self._pool.write() as conn:
            sqlite_acts.renew(conn, [token for token, _ in claims], self.lease_s)

    # -- records ---------------------------------------------------------------------------------

    def add(self, key: str, value: str, ttl_s: float) -> bool:
        """Insert if absent; see :meth:`host.store.base.Store.add`."""
        check_ttl(ttl_s)
        now = time.time()
        with self._write() as conn:
            cursor = conn.execute(
                "INSERT INTO store_records (key, value, owner, expires) VALUES (?, ?, NULL, ?)"
                " ON CONFLICT (key) DO UPDATE SET value = excluded.value, owner = NULL,"
                " expires = excluded.expires WHERE store_records.expires <= ?",
                (key, value, now + ttl_s, now),
            )
            return cursor.rowcount == 1

    def get(self, key: str) -> str | None:
        """The live value for ``key``; see :meth:`host.store.base.Store.get`."""
        with self._pool.connection() as conn:
            row = conn.execute(
                "SELECT value FROM store_records WHERE key = ? AND expires > ?",
                (key, time.time()),
            ).fetchone()
        return None if row is None else row[0]

    def put(self, key: str, value: str, ttl_s: float) -> None:
        """Insert or overwrite; see :meth:`host.store.base.Store.put`."""
        check_ttl(ttl_s)
        with self._write() as conn:
            conn.execute(
                "INSERT OR REPLACE INTO store_records (key, value, owner, expires)"
                " VALUES (?, ?, NULL, ?)",
                (key, value, time.time() + ttl_s),
            )

    def delete(self, key: str) -> None:
        """Remove the record; see :meth:`host.store.base.Store.delete`."""
        with self._write() as conn:
            conn.execute("DELETE FROM store_records WHERE key = ?", (key,))

    # -- queues ----------------------------------------------------------------------------------

    def push(self, key: str, value: str, ttl_s: float) -> None:
        """Append to a queue; see :meth:`host.store.base.Store.push`."""
        check_ttl(ttl_s)
        expires = time.time() + ttl_s
        with self._write() as conn:
            conn.execute(
                "INSERT INTO store_queue (key, value, expires) VALUES (?, ?, ?)",
                (key, value, expires),
            )
            # Like a Redis key's expiry: the whole queue lives ttl_s after its last push.
            conn.execute("UPDATE store_queue SET expires = ? WHERE key = ?", (expires, key))

    def pop(self, key: str, timeout_s: float) -> str | None:
        """Take the oldest value, woken by the watcher; see :meth:`host.store.base.Store.pop`."""
        return pop_waiting(self._watcher, key, timeout_s, self._take)

    def _take(self, key: str) -> str | None:
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
            with self._write() as conn:
                taken = conn.execute("DELETE FROM store_queue WHERE id = ?", (row[0],))
            if taken.rowcount == 1:
                return str(row[1])
            # another worker took it first; look again at once

    # -- approvals and audit records -------------------------------------------------------------

    def grant_approval(
        self, principal: str, tool: str, question: str, key: str, ttl_s: float
    ) -> Approval:
        """Remember a yes; see :meth:`host.store.base.Store.grant_approval`."""
        approval = Approval.new(principal, tool, question, key, ttl_s)
        with self._write() as conn:
            sqlite_approvals.grant(conn, approval)
        return approval

    def find_approval(self, approval: str) -> Approval | None:
        """A live approval by id; see :meth:`host.store.base.Store.find_approval`."""
        with self._pool.connection() as conn:
            return sqlite_approvals.find(conn, approval)

    def approvals(self, *, principal: str | None = None, tool: str | None = None) -> list[Approval]:
        """Live approvals; see :meth:`host.store.base.Store.approvals`."""
        check_filters(principal=principal, tool=tool)
        with self._pool.connection() as conn:
            return sqlite_approvals.listed(conn, principal, tool)

    def revoke_approvals(
        self,
        *,
        approval: str | None = None,
        principal: str | None = None,
        tool: str | None = None,
    ) -> int:
        """Forget approvals; see :meth:`host.store.base.Store.revoke_approvals`."""
        check_revoke(approval, principal, tool)
        with self._write() as conn:
            return sqlite_approvals.revoke(conn, approval, principal, tool)

    def write_audit(self, record: AuditRecord, *, rank: int, keep_s: float) -> bool:
        """Write a call's record; see :meth:`host.store.base.Store.write_audit`.

        NOTE: it waits at most :data:`AUDIT_WAIT_S` for another process's write lock, not the
        usual busy timeout: a stuck writer must not hold every call's answer for that long.
        """
        check_ttl(keep_s, "keep_s")
        with self._pool.write(wait_s=AUDIT_WAIT_S) as conn:
            return sqlite_audit.write(conn, record, rank)

    def write_audits(self, records: Sequence[tuple[AuditRecord, int]], *, keep_s: float) -> None:
        """Write many calls' records in one transaction; see :meth:`Store.write_audits`.

        NOTE: it waits at most :data:`AUDIT_WAIT_S` for another process's write lock, as
        :meth:`write_audit` does.
        """
        check_ttl(keep_s, "keep_s")
        if not records:
            return
        with self._pool.write(wait_s=AUDIT_WAIT_S) as conn:
            sqlite_audit.write_many(conn, records)

    def audit_records(
        self,
        *,
        tool: str | None = None,
        principal: str | None = None,
        since: float | None = None,
        limit: int = 100,
    ) -> list[AuditRecord]:
        """Read records, newest first; see :meth:`host.store.base.Store.audit_records`."""
        check_filters(tool=tool, principal=principal)
        check_limit(limit)
        with self._pool.connection() as conn:
            return sqlite_audit.query(conn, tool, principal, since, limit)

    def prune_audit(self, before: float) -> int:
        """Delete old records; see :meth:`host.store.base.Store.prune_audit`."""
        with self._write() as conn:
            return sqlite_audit.prune(conn, before)

    # -- the store as a whole --------------------------------------------------------------------

    def health(self) -> str | None:
        """None if the file is the one opened and takes a write; see :meth:`Store.health`."""
        problem = self._pool.problem()
        if problem is not None:
            return problem
        # NOTE: an open file stays writable after a chmod (and SQLite reuses this process's open
        # descriptors for new connections), so the probe write alone would say "fine" while every
        # worker that starts afterwards fails: ask the file system about the paths too.
        effective = os.access in os.supports_effective_ids
        for path in (self.path.parent, self.path, *self._pool.companions()):
            if not os.access(path, os.W_OK, effective_ids=effective):
                return f"the SQLite store cannot be written: {path} is not writable"
        try:
            # NOTE: a readiness probe must answer within its own timeout (about a second):
            # a write lock held longer than that is itself the answer.
            with self._pool.write(wait_s=HEALTH_WAIT_S, queued=False) as conn:
                conn.execute(
                    "INSERT OR REPLACE INTO store_health (id, at, pid) VALUES (1, ?, ?)",
                    (time.time(), os.getpid()),
                )
        except StoreError as exc:
            return exc.message
        return None

    def durability(self) -> list[Risk]:
        """A replaced or deleted file is the one way this store loses records it knows of."""
        problem = self._pool.problem()
        return [] if problem is None else [Risk(problem, refuse=True)]

    def close(self) -> None:
        """Stop the background threads and close this process's idle connections."""
        self._keeper.stop()
        self._watcher.stop()
        self._pool.close()

    # -- helpers ---------------------------------------------------------------------------------

    @contextmanager
    def _write(self) -> Iterator[sqlite3.Connection]:
        """A write transaction (see :meth:`Connections.write`) that also sweeps now and then."""
        with self._pool.write() as conn:
            yield conn
            self._maybe_sweep(conn)

    def _maybe_sweep(self, conn: sqlite3.Connection) -> None:
        """Delete expired rows now and then (inside a write transaction)."""
        if time.monotonic() < self._next_sweep:
            return
        self._next_sweep = time.monotonic() + self._sweep_every_s
        now = time.time()
        conn.execute("DELETE FROM store_records WHERE expires <= ?", (now,))
        conn.execute("DELETE FROM store_queue WHERE expires <= ?", (now,))
        conn.execute("DELETE FROM store_acts WHERE expires <= ?", (now,))
        conn.execute("DELETE FROM store_approvals WHERE expires <= ?", (now,))
