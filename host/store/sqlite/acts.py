"""Act claims and locks in SQLite: one row per act (or lock), its owner's token and its lease.

A row reads ``done`` once it has a value, ``lost`` once it has a reason or its lease (a Unix time;
every process on the machine shares the clock) has passed, and ``running`` otherwise. A row is only
ever replaced once it has expired, ``ttl`` after its owner last renewed it or recorded its value.
Claims and results are written in group commits (:mod:`host.store.sqlite.durable`), with fsync.

A lock's row is held while its lease lasts; a lapsed one is free to the next taker and no longer
its old holder's. Locks are not written with fsync: after a power loss every holder is gone too.
A row left by a holder that died is replaced by the next taker of its name.
"""

from __future__ import annotations

import sqlite3
import time

from host.store.chain import Chain, prepare
from host.store.records import STARTED
from host.store.roles import Started
from host.store.sqlite import audit
from host.store.sqlite.durable import DurableWrites
from host.store.sqlite.pool import Connections
from host.store.values import LAPSED, ActState

__all__ = ["SCHEMA", "SqliteActs", "claim", "mark_lost", "record", "renew", "state"]

SCHEMA = """
CREATE TABLE IF NOT EXISTS store_acts (
    key TEXT PRIMARY KEY,
    owner TEXT NOT NULL,     -- the claim's token
    incident TEXT NOT NULL,
    value TEXT,              -- the recorded result: done
    lost TEXT,               -- why the result is unknown, when the owner could say so
    lease REAL NOT NULL,     -- Unix time the owner's lease runs to, while running
    ttl REAL NOT NULL,       -- seconds the row lives past the owner's last sign of life
    expires REAL NOT NULL    -- Unix time
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS store_acts_expires ON store_acts (expires);
DROP INDEX IF EXISTS store_acts_owner;  -- renewals go by key: one index less per claim
CREATE TABLE IF NOT EXISTS store_locks (
    name TEXT PRIMARY KEY,
    owner TEXT NOT NULL,     -- the holder's token
    lease REAL NOT NULL      -- Unix time the holder's lease runs to
) WITHOUT ROWID;
DROP INDEX IF EXISTS store_locks_owner;
"""

_COLUMNS = "incident, value, lost, lease"


def claim(
    conn: sqlite3.Connection, key: str, token: str, incident: str, ttl_s: float, lease_s: float
) -> ActState | None:
    """Claim ``key`` for ``token`` (None) or return the state of whoever has it.

    Call inside a write transaction, so the claim and the read of a taken key agree.
    """
    now = time.time()
    taken = conn.execute(
        "INSERT INTO store_acts (key, owner, incident, value, lost, lease, ttl, expires)"
        " VALUES (?, ?, ?, NULL, NULL, ?, ?, ?)"
        " ON CONFLICT (key) DO UPDATE SET owner = excluded.owner, incident = excluded.incident,"
        " value = NULL, lost = NULL, lease = excluded.lease, ttl = excluded.ttl,"
        " expires = excluded.expires WHERE store_acts.expires <= ?",
        (key, token, incident, now + lease_s, ttl_s, now + max(ttl_s, lease_s), now),
    ).rowcount
    if taken == 1:
        return None
    found = state(conn, key, now)
    assert found is not None  # the row is live: the upsert did not take it, in this transaction
    return found


def state(conn: sqlite3.Connection, key: str, now: float | None = None) -> ActState | None:
    """The act's state, or None if there is no live row for it."""
    now = time.time() if now is None else now
    row = conn.execute(
        f"SELECT {_COLUMNS} FROM store_acts WHERE key = ? AND expires > ?", (key, now)
    ).fetchone()
    if row is None:
        return None
    incident, value, lost, lease = row
    if value is not None:
        return ActState("done", str(value), str(incident))
    if lost is not None:
        return ActState("lost", None, str(incident), str(lost))
    if lease <= now:
        return ActState("lost", None, str(incident), LAPSED)
    return ActState("running", None, str(incident))


def record(
    conn: sqlite3.Connection, key: str, token: str, incident: str, value: str, ttl_s: float
) -> bool:
    """Record ``value`` for the claim ``token``; False if another claim holds the key now.

    A row that expired meanwhile (its owner was stalled past ``ttl``) is written afresh: the
    result is better news than nothing. A row another claim took is left alone.
    """
    now = time.time()
    return (
        conn.execute(
            "INSERT INTO store_acts (key, owner, incident, value, lost, lease, ttl, expires)"
            " VALUES (?, ?, ?, ?, NULL, ?, ?, ?)"
            " ON CONFLICT (key) DO UPDATE SET value = excluded.value, lost = NULL,"
            " lease = excluded.lease, expires = excluded.expires"
            " WHERE store_acts.owner = excluded.owner OR store_acts.expires <= ?",
            (key, token, incident, value, now, ttl_s, now + ttl_s, now),
        ).rowcount
        == 1
    )


def mark_lost(conn: sqlite3.Connection, key: str, token: str, reason: str, ttl_s: float) -> None:
    """Say why the claim ``token`` has no result, unless it has one."""
    now = time.time()
    conn.execute(
        "UPDATE store_acts SET lost = ?, lease = ?, expires = max(expires, ?)"
        " WHERE key = ? AND owner = ? AND value IS NULL",
        (reason, now, now + ttl_s, key, token),
    )


def renew(conn: sqlite3.Connection, claims: list[tuple[str, str]], lease_s: float) -> None:
    """Extend the leases (and lives) of the unrecorded claims among ``(token, key)`` pairs.

    A lease that lapsed is renewed too: its owner was only slow (stopped, or starved of the write
    lock), and is evidently alive. Readers meanwhile were told "lost"; never "free".

    NOTE: by key, with the owner checked on the row: an index on owners cost every claim a page
    of its own, for a renewal every third of a lease.
    """
    now = time.time()
    conn.executemany(
        "UPDATE store_acts SET lease = ?1, expires = max(expires, ?2 + ttl, ?1)"
        " WHERE key = ?3 AND owner = ?4 AND value IS NULL AND lost IS NULL",
        [(now + lease_s, now, key, token) for token, key in claims],
    )


class SqliteActs:
    """The act claims and locks of one SQLite store.

    Args:
        pool: The store's connections.
        durable: The store's group commits, for claims and results.
        chain: The store's audit chain, which a claim appends its act's record to.
    """

    def __init__(self, pool: Connections, durable: DurableWrites, chain: Chain) -> None:
        self._pool = pool
        self._durable = durable
        self._chain = chain

    def claim(
        self,
        key: str,
        token: str,
        incident: str,
        ttl_s: float,
        lease_s: float,
        started: Started | None = None,
    ) -> ActState | None:
        """Claim ``key`` for ``token`` (None), or the state of whoever has it; on disk first.

        ``started``'s record is written in the claim's own transaction, if the claim is taken.
        """

        # NOTE: the record's JSON is made before the write lock is taken, not while holding it.
        entry = [prepare(started[0], STARTED)] if started is not None else []

        def apply(conn: sqlite3.Connection) -> ActState | None:
            found = claim(conn, key, token, incident, ttl_s, lease_s)
            if found is None and entry:
                audit.append(conn, self._chain, entry, time.time())
            return found

        return self._durable.run(apply)

    def state(self, key: str) -> ActState | None:
        """The act's state, or None if there is no live row for it."""
        with self._pool.connection() as conn:
            return state(conn, key)

    def record(self, key: str, token: str, incident: str, value: str, ttl_s: float) -> bool:
        """Record ``value`` for the claim ``token``, on disk; False if another claim holds it."""
        return self._durable.run(lambda conn: record(conn, key, token, incident, value, ttl_s))

    def mark_lost(self, key: str, token: str, reason: str, ttl_s: float) -> None:
        """Say why the claim ``token`` has no result, unless it has one."""
        with self._pool.write() as conn:
            mark_lost(conn, key, token, reason, ttl_s)

    def renew(self, claims: list[tuple[str, str]], lease_s: float) -> None:
        """Extend the leases of the unrecorded claims among ``(token, key)`` pairs."""
        with self._pool.write() as conn:
            renew(conn, claims, lease_s)

    def take_lock(self, name: str, token: str, lease_s: float) -> bool:
        """Hold the lock ``name`` with ``token`` if it is free or its lease lapsed."""
        now = time.time()
        with self._pool.write() as conn:
            return (
                conn.execute(
                    "INSERT INTO store_locks (name, owner, lease) VALUES (?, ?, ?)"
                    " ON CONFLICT (name) DO UPDATE SET owner = excluded.owner,"
                    " lease = excluded.lease WHERE store_locks.lease <= ?",
                    (name, token, now + lease_s, now),
                ).rowcount
                == 1
            )

    def release_lock(self, name: str, token: str) -> bool:
        """Free the lock ``name`` if ``token`` holds it; False if its lease had lapsed."""
        with self._pool.write() as conn:
            held = conn.execute(
                "DELETE FROM store_locks WHERE name = ? AND owner = ? AND lease > ?",
                (name, token, time.time()),
            ).rowcount
            if not held:  # lapsed: free already, but the row may still be ours
                conn.execute("DELETE FROM store_locks WHERE name = ? AND owner = ?", (name, token))
            return held == 1

    def renew_locks(self, locks: list[tuple[str, str]], lease_s: float) -> None:
        """Extend the leases of the locks among ``(token, name)`` pairs that have not lapsed."""
        now = time.time()
        with self._pool.write() as conn:
            conn.executemany(
                "UPDATE store_locks SET lease = ?1 WHERE name = ?3 AND owner = ?4 AND lease > ?2",
                [(now + lease_s, now, name, token) for token, name in locks],
            )
