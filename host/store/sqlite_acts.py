"""Act claims in SQLite: one row per act, its owner's token and the lease that token renews.

A row reads ``done`` once it has a value, ``lost`` once it has a reason or its lease (a Unix time;
every process on the machine shares the clock) has passed, and ``running`` otherwise. A row is only
ever replaced once it has expired, ``ttl`` after its owner last renewed it or recorded its value.
"""

from __future__ import annotations

import sqlite3
import time

from host.store.base import LAPSED, ActState

__all__ = ["SCHEMA", "claim", "mark_lost", "record", "renew", "state"]

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
CREATE INDEX IF NOT EXISTS store_acts_owner ON store_acts (owner);
CREATE TABLE IF NOT EXISTS store_health (
    id INTEGER PRIMARY KEY CHECK (id = 1),
    at REAL NOT NULL,        -- when a health probe last wrote
    pid INTEGER NOT NULL
);
"""

_COLUMNS = "incident, value, lost, lease"

# SQLite's default limit on host parameters was 999 before 3.32; stay well under it.
_CHUNK = 500


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


def renew(conn: sqlite3.Connection, tokens: list[str], lease_s: float) -> None:
    """Extend the leases (and lives) of the unrecorded claims among ``tokens``.

    A lease that lapsed is renewed too: its owner was only slow (stopped, or starved of the write
    lock), and is evidently alive. Readers meanwhile were told "lost"; never "free".
    """
    now = time.time()
    for start in range(0, len(tokens), _CHUNK):
        chunk = tokens[start : start + _CHUNK]
        marks = ", ".join(f"?{n}" for n in range(3, len(chunk) + 3))
        conn.execute(
            "UPDATE store_acts SET lease = ?1, expires = max(expires, ?2 + ttl, ?1)"
            f" WHERE owner IN ({marks}) AND value IS NULL AND lost IS NULL",
            (now + lease_s, now, *chunk),
        )
