"""The change-control example's handlers: each restart is a row in a real SQLite database."""

from __future__ import annotations

import os
import sqlite3
import time
from pathlib import Path
from typing import Any


def _db(ctx: Any) -> sqlite3.Connection:
    path = Path(os.environ.get("OPS_DB") or Path(ctx.data_dir) / "ops.db")
    path.parent.mkdir(parents=True, exist_ok=True)
    conn = sqlite3.connect(path)
    conn.execute(
        "CREATE TABLE IF NOT EXISTS restarts (at REAL, service TEXT, environment TEXT,"
        " caller TEXT, approved_by TEXT)"
    )
    return conn


def restart(
    ctx: Any, service: str, environment: str, change: dict[str, Any] | None = None
) -> dict[str, Any]:
    approved_by = (change or {}).get("approved_by") or []
    with _db(ctx) as conn:
        conn.execute(
            "INSERT INTO restarts VALUES (?, ?, ?, ?, ?)",
            (time.time(), service, environment, ctx.principal, ",".join(approved_by)),
        )
    return {"restarted": service, "environment": environment, "approved_by": approved_by}
