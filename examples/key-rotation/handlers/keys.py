"""The key-rotation example's handler: it keeps only a key's SHA-256, in a real SQLite database."""

from __future__ import annotations

import hashlib
import os
import sqlite3
import time
from pathlib import Path
from typing import Any


def _db(ctx: Any) -> sqlite3.Connection:
    path = Path(os.environ.get("KEYS_DB") or Path(ctx.data_dir) / "keys.db")
    path.parent.mkdir(parents=True, exist_ok=True)
    conn = sqlite3.connect(path)
    conn.execute(
        "CREATE TABLE IF NOT EXISTS keys (at REAL, service TEXT, caller TEXT, sha256 TEXT)"
    )
    return conn


def rotate(ctx: Any, service: str, api_key: str) -> dict[str, Any]:
    digest = hashlib.sha256(api_key.encode("utf-8")).hexdigest()
    with _db(ctx) as conn:
        conn.execute(
            "INSERT INTO keys VALUES (?, ?, ?, ?)", (time.time(), service, ctx.principal, digest)
        )
    return {"rotated": True, "service": service, "sha256": digest[:12]}
