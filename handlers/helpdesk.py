"""Help-desk handlers: tickets and an outbox of customer emails in a real SQLite database.

The database lives at ``$HELPDESK_DB``, or ``helpdesk.db`` in the host's data directory
(``$HOST_DATA_DIR``, default ``.host/``). It is created and seeded on first use. Handlers are plain
functions: the host passes each parameter by name from what is in scope at that step.
"""

from __future__ import annotations

import os
import sqlite3
from contextlib import closing
from pathlib import Path
from typing import Any

SEED = [
    ("T-1", "Cannot log in", "Nour"),
    ("T-2", "Invoice total is wrong", ""),
    ("T-3", "Login link expired", ""),
    ("T-4", "Password reset email missing", ""),
]


def _path() -> Path:
    explicit = os.environ.get("HELPDESK_DB")
    if explicit:
        return Path(explicit)
    return Path(os.environ.get("HOST_DATA_DIR", ".host")) / "helpdesk.db"


def _connect() -> sqlite3.Connection:
    path = _path()
    path.parent.mkdir(parents=True, exist_ok=True)
    db = sqlite3.connect(path, timeout=30, isolation_level=None)
    db.row_factory = sqlite3.Row
    db.execute("PRAGMA journal_mode=WAL")
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
    with db:
        if db.execute("INSERT OR IGNORE INTO seeded VALUES (1)").rowcount:
            db.executemany("INSERT OR IGNORE INTO tickets (id, title, agent) VALUES (?, ?, ?)", SEED)
    return db


def get_ticket(id: str) -> dict[str, Any] | None:
    """The ticket ``id``, or None (the spec's ``missing:`` turns that into a tool error)."""
    with closing(_connect()) as db:
        row = db.execute("SELECT id, title, status, agent FROM tickets WHERE id = ?", (id,)).fetchone()
    return dict(row) if row else None


def close_ticket(id: str, ticket: dict[str, Any]) -> dict[str, Any]:
    """Close the ticket and queue one email to its customer, in one transaction."""
    with closing(_connect()) as db, db:
        db.execute("UPDATE tickets SET status = 'closed' WHERE id = ?", (id,))
        db.execute(
            "INSERT INTO outbox (ticket, body) VALUES (?, ?)",
            (id, f'To the customer of {id}: "{ticket["title"]}" is resolved.'),
        )
    return {"id": id, "closed": True}


def assign_ticket(id: str, agent: str) -> dict[str, Any]:
    """Give the ticket to ``agent``."""
    with closing(_connect()) as db, db:
        db.execute("UPDATE tickets SET agent = ? WHERE id = ?", (agent, id))
    return {"id": id, "assigned": True, "agent": agent}


def delete_ticket(id: str) -> dict[str, Any]:
    """Delete the ticket for good."""
    with closing(_connect()) as db, db:
        db.execute("DELETE FROM tickets WHERE id = ?", (id,))
    return {"id": id, "deleted": True}


def list_outbox() -> dict[str, Any]:
    """Every email sent to a customer, oldest first."""
    with closing(_connect()) as db:
        rows = db.execute("SELECT body FROM outbox ORDER BY n").fetchall()
    return {"emails": [r["body"] for r in rows]}
