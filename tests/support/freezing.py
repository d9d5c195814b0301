"""Freeze a store's process (SIGSTOP) between its writes, never inside one."""

from __future__ import annotations

import os
import signal
import sqlite3
import time
from collections.abc import Iterator
from contextlib import contextmanager

__all__ = ["frozen"]


@contextmanager
def frozen(pid: int, store_url: str, attempts: int = 50) -> Iterator[None]:
    """``pid`` stopped for the block, holding no SQLite write lock of ``store_url``'s file.

    NOTE: a process stopped inside a write transaction (its lease keeper renews every third of a
    lease) holds the SQLite file's write lock while it is frozen, and every other writer fails
    after its busy timeout, which is what SQLite promises and not what the callers test. So the
    freeze is retried until the file takes a write. Redis has no such lock: one stop is enough.
    """
    path = store_url.removeprefix("sqlite:///") if store_url.startswith("sqlite:") else None
    for _ in range(attempts):
        os.kill(pid, signal.SIGSTOP)
        if path is None or _writable(path):
            break
        os.kill(pid, signal.SIGCONT)
        time.sleep(0.02)
    else:
        raise AssertionError(
            f"process {pid} held {path}'s write lock at every one of {attempts} stops"
        )
    try:
        yield
    finally:
        os.kill(pid, signal.SIGCONT)


def _writable(path: str) -> bool:
    conn = sqlite3.connect(path, timeout=0, isolation_level=None)
    try:
        conn.execute("BEGIN IMMEDIATE")
        conn.execute("ROLLBACK")
        return True
    except sqlite3.OperationalError:
        return False
    finally:
        conn.close()
