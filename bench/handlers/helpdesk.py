"""The help-desk handlers for benchmarks: the example's functions, with one connection per thread.

Same names, parameters, SQL and results as ``handlers/helpdesk.py``, so specs written for the
example run unchanged (``HOST_HANDLERS=bench/handlers``). The difference is cost: the example opens
a connection and runs its schema script on every call (about 0.5 ms per read here), which would
swamp the servers' own cost that the benchmark compares. Here each thread keeps one connection and
the schema is set up once per process. The database is ``$HELPDESK_DB`` or
``$HOST_DATA_DIR/helpdesk.db``.
"""

from __future__ import annotations

import os
import sqlite3
import threading
from pathlib import Path
from typing import Any

__all__ = ["assign_ticket", "close_ticket", "delete_ticket", "get_ticket", "list_outbox"]

SEED = [
    ("T-1", "Cannot log in", "Nour"),
    ("T-2", "Invoice total is wrong", ""),
    ("T-3", "Login link expired", ""),
    ("T-4", "Password reset email missing", ""),
]
_local = threading.local()
_setup = threading.Lock()
_ready: set[str] = set()


def _path() -> Path:
    explicit = os.environ.get("HELPDESK_DB")
    if explicit:
        return Path(explicit)
    return Path(os.environ.get("HOST_DATA_DIR", ".host")) / "helpdesk.db"


def _db() -> sqlite3.Connection:
    path = _path()
    db: sqlite3.Connection | None = getattr(_local, "db", None)
    if db is not None and getattr(_local, "path", None) == path:
        return db
    path.parent.mkdir(parents=True, exist_ok=True)
    db = sqlite3.connect(path, timeout=30, isolation_level=None, check_same_thread=False)
    db.row_factory = sqlite3.Row
    with _setup:
        if str(path) not in _ready:
            db.execute("PRAGMA journal_mode=WAL")
            db.executescript(
                """
                CREATE TABLE IF NOT EXISTS tickets (
                    id TEXT PRIMARY KEY, title TEXT NOT NULL,
                    status TEXT NOT NULL DEFAULT 'open', agent TEXT NOT NULL DEFAULT '');
                CREATE TABLE IF NOT EXISTS outbox (
                    n INTEGER PRIMARY KEY AUTOINCREMENT, ticket TEXT NOT NULL, body TEXT NOT NULL);
                CREATE TABLE IF NOT EXISTS seeded (done INTEGER PRIMARY KEY);
                """
            )
            with db:
                if db.execute("INSERT OR IGNORE INTO seeded VALUES (1)").rowcount:
                    db.executemany(
                        "INSERT OR IGNORE INTO tickets (id, title, agent) VALUES (?, ?, ?)", SEED
                    )
            _ready.add(str(path))
    # NOTE: WAL with synchronous=NORMAL is durable across crashes of the process, and keeps an
    # fsync per commit out of the figures; both servers under test get the same setting.
    db.execute("PRAGMA synchronous=NORMAL")
    _local.db, _local.path = db, path
    return db


def get_ticket(id: str) -> dict[str, Any] | None:
    """The ticket ``id``, or None."""
    row = (
        _db().execute("SELECT id, title, status, agent FROM tickets WHERE id = ?", (id,)).fetchone()
    )
    return dict(row) if row else None


def close_ticket(id: str, ticket: dict[str, Any]) -> dict[str, Any]:
    """Close the ticket and queue one email to its customer, in one transaction."""
    db = _db()
    with db:
        db.execute("BEGIN IMMEDIATE")
        db.execute("UPDATE tickets SET status = 'closed' WHERE id = ?", (id,))
        db.execute(
            "INSERT INTO outbox (ticket, body) VALUES (?, ?)",
            (id, f'To the customer of {id}: "{ticket["title"]}" is resolved.'),
        )
    return {"id": id, "closed": True}


def assign_ticket(id: str, agent: str) -> dict[str, Any]:
    """Give the ticket to ``agent``."""
    db = _db()
    with db:
        db.execute("BEGIN IMMEDIATE")
        db.execute("UPDATE tickets SET agent = ? WHERE id = ?", (agent, id))
    return {"id": id, "assigned": True, "agent": agent}


def delete_ticket(id: str) -> dict[str, Any]:
    """Delete the ticket for good."""
    db = _db()
    with db:
        db.execute("BEGIN IMMEDIATE")
        db.execute("DELETE FROM tickets WHERE id = ?", (id,))
    return {"id": id, "deleted": True}


def list_outbox() -> dict[str, Any]:
    """Every email sent to a customer, oldest first."""
    rows = _db().execute("SELECT body FROM outbox ORDER BY n").fetchall()
    return {"emails": [r["body"] for r in rows]}
