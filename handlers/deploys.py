"""Deploy handlers: each rollback is a row in the example's SQLite database (its ``deploys`` table).

The database is the help desk's (``$HELPDESK_DB``, or ``helpdesk.db`` in ``$HOST_DATA_DIR``). The
spec's ``lock:`` makes sure that two rollbacks of one service and environment never run at once.
"""

from __future__ import annotations

import os
import sqlite3
from pathlib import Path
from typing import Any


def _connect() -> sqlite3.Connection:
    explicit = os.environ.get("HELPDESK_DB")
    path = Path(explicit or Path(os.environ.get("HOST_DATA_DIR", ".host")) / "helpdesk.db")
    path.parent.mkdir(parents=True, exist_ok=True)
    db = sqlite3.connect(path, timeout=30, isolation_level=None)
    db.execute(
        "CREATE TABLE IF NOT EXISTS deploys (n INTEGER PRIMARY KEY AUTOINCREMENT,"
        " service TEXT NOT NULL, environment TEXT NOT NULL, action TEXT NOT NULL,"
        " reason TEXT NOT NULL DEFAULT '')"
    )
    return db


def rollback_deploy(service: str, environment: str, reason: str = "") -> dict[str, Any]:
    """Roll ``service`` in ``environment`` back: here, one row in the deploy log."""
    db = _connect()
    try:
        db.execute(
            "INSERT INTO deploys (service, environment, action, reason) VALUES (?, ?, ?, ?)",
            (service, environment, "rollback", reason),
        )
    finally:
        db.close()
    return {"service": service, "environment": environment, "rolled_back": True}
