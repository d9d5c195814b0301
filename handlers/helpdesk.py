"""Help-desk handlers: tickets and an outbox of customer emails in a real SQLite database.

The database lives at ``$HELPDESK_DB``, or ``helpdesk.db`` in the host's data directory
(``$HOST_DATA_DIR``, default ``.host/``). It is created and seeded on first use. Handlers are plain
functions: the host passes each parameter by name from what is in scope at that step.
"""

from __future__ import annotations

import os
import sqlite3
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

SEED = [
    ("T-1", "Cannot log in", "Nour"),
    ("T-2", "Invoice total is wrong", ""),
    ("T-3", "Login link expired", ""),
    ("T-4", "Password reset email missing", ""),
]


_local = threading.local()
_setup = threading.Lock()
_ready: set[Path] = set()


def _path() -> Path:
    explicit = os.environ.get("HELPDESK_DB")
    if explicit:
        return Path(explicit)
    return Path(os.environ.get("HOST_DATA_DIR", ".host")) / "helpdesk.db"


def _create(db: sqlite3.Connection) -> None:
    _wal(db)
    # NOTE: IF NOT EXISTS and INSERT OR IGNORE make the seeding safe when several workers
    # open a new database at the same moment.
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
    # NOTE: the mark and the tickets commit together: apart, a second worker could find the mark
    # of the first and read the tickets before they were there.
    db.execute("BEGIN IMMEDIATE")
    try:
        if db.execute("INSERT OR IGNORE INTO seeded VALUES (1)").rowcount:
            db.executemany(
                "INSERT OR IGNORE INTO tickets (id, title, agent) VALUES (?, ?, ?)", SEED
            )
    except BaseException:
        db.execute("ROLLBACK")
        raise
    db.execute("COMMIT")


def _wal(db: sqlite3.Connection) -> None:
    """Switch the database to WAL, waiting while another worker creates it.

    NOTE: SQLite answers "database is locked" to a change of journal mode at once, without the
    connection's busy timeout, while another connection writes the new file.
    """
    deadline = time.monotonic() + 30
    while True:
        try:
            db.execute("PRAGMA journal_mode=WAL")
            return
        except sqlite3.OperationalError as exc:
            if "locked" not in str(exc) or time.monotonic() > deadline:
                raise
            time.sleep(0.01)


def _db() -> sqlite3.Connection:
    """This thread's connection to the database, created and seeded on first use.

    The environment is read on every call, so a test that points ``HELPDESK_DB`` or
    ``HOST_DATA_DIR`` somewhere else gets a fresh database there.
    """
    where = (os.environ.get("HELPDESK_DB"), os.environ.get("HOST_DATA_DIR"))
    if getattr(_local, "where", None) == where:
        db: sqlite3.Connection = _local.db
        return db
    path = _path()
    if getattr(_local, "db", None) is not None:
        _local.db.close()
    path.parent.mkdir(parents=True, exist_ok=True)
    db = sqlite3.connect(path, timeout=30, isolation_level=None)
    db.row_factory = sqlite3.Row
    # WAL with NORMAL sync survives a crash of the process; only a power cut may lose the
    # last commits. Right for an example; a real desk would choose its own trade-off.
    db.execute("PRAGMA synchronous=NORMAL")
    with _setup:
        if path not in _ready or not path.exists():
            _create(db)
            _ready.add(path)
    _local.db, _local.where = db, where
    return db


@contextmanager
def _transaction() -> Iterator[sqlite3.Connection]:
    """One write transaction: all of it happens, or none of it."""
    db = _db()
    db.execute("BEGIN IMMEDIATE")
    try:
        yield db
    except BaseException:
        db.execute("ROLLBACK")
        raise
    db.execute("COMMIT")


def get_ticket(id: str) -> dict[str, Any] | None:
    """The ticket ``id``, or None (the spec's ``missing:`` turns that into a tool error)."""
    query = "SELECT id, title, status, agent FROM tickets WHERE id = ?"
    row = _db().execute(query, (id,)).fetchone()
    return dict(row) if row else None


def close_ticket(id: str, ticket: dict[str, Any]) -> dict[str, Any]:
    """Close the ticket and queue one email to its customer, in one transaction."""
    with _transaction() as db:
        db.execute("UPDATE tickets SET status = 'closed' WHERE id = ?", (id,))
        db.execute(
            "INSERT INTO outbox (ticket, body) VALUES (?, ?)",
            (id, f'To the customer of {id}: "{ticket["title"]}" is resolved.'),
        )
    return {"id": id, "closed": True}


def assign_ticket(id: str, agent: str) -> dict[str, Any]:
    """Give the ticket to ``agent``."""
    with _transaction() as db:
        db.execute("UPDATE tickets SET agent = ? WHERE id = ?", (agent, id))
    return {"id": id, "assigned": True, "agent": agent}


def delete_ticket(id: str) -> dict[str, Any]:
    """Delete the ticket for good."""
    with _transaction() as db:
        db.execute("DELETE FROM tickets WHERE id = ?", (id,))
    return {"id": id, "deleted": True}


def list_outbox() -> dict[str, Any]:
    """Every email sent to a customer, oldest first."""
    rows = _db().execute("SELECT body FROM outbox ORDER BY n").fetchall()
    return {"emails": [r["body"] for r in rows]}


def ticket_counts() -> dict[str, int]:
    """Open, closed and unassigned open tickets (a read: it changes nothing)."""
    row = (
        _db()
        .execute(
            "SELECT COALESCE(SUM(status = 'open'), 0) AS open,"
            " COALESCE(SUM(status = 'closed'), 0) AS closed,"
            " COALESCE(SUM(status = 'open' AND agent = ''), 0) AS unassigned FROM tickets"
        )
        .fetchone()
    )
    return dict(row)


def outbox_count() -> int:
    """How many emails were sent to customers (a read)."""
    count: int = _db().execute("SELECT COUNT(*) FROM outbox").fetchone()[0]
    return count
