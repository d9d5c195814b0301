"""Writers of one process take turns before they ask SQLite for its write lock.

SQLite's busy handler polls with sleeps and serves nobody in order: with hundreds of threads of one
worker writing at once (a burst of answers to open legacy questions), some waited past the busy
timeout and their requests failed with "database is locked" while others wrote. Now a process's
writers queue on a lock of their own, so SQLite only arbitrates between processes.
"""

from __future__ import annotations

import contextlib
import sqlite3
import threading
import time
from pathlib import Path

import pytest

from host.errors import StoreError
from host.store import open_store
from host.store.sqlite import SqliteStore


def test_a_writer_waits_for_its_turn_in_the_process_not_in_sqlite(tmp_path: Path) -> None:
    store = SqliteStore(tmp_path / "store.db", busy_timeout_s=0.3)
    pool = store._pool
    holding, release = threading.Event(), threading.Event()

    def hold() -> None:
        with pool.write():
            holding.set()
            release.wait(10)

    holder = threading.Thread(target=hold)
    holder.start()
    try:
        assert holding.wait(10)
        with pytest.raises(StoreError, match=r"no turn to write within 0\.3s"):
            store.put("k", "v", 60)
    finally:
        release.set()
        holder.join(10)
    store.put("k", "v", 60)  # the turn came back
    assert store.get("k") == "v"
    store.close()


def test_hundreds_of_threads_writing_at_once_all_succeed(tmp_path: Path) -> None:
    store = SqliteStore(tmp_path / "store.db", busy_timeout_s=10.0)
    errors: list[str] = []
    go = threading.Event()

    def write(n: int) -> None:
        go.wait(10)
        for i in range(5):
            try:
                store.push(f"q{n}", str(i), 60)
                assert store.add(f"spent:{n}:{i}", "1", 60)
            except StoreError as exc:
                errors.append(exc.message)

    threads = [threading.Thread(target=write, args=(n,)) for n in range(300)]
    for thread in threads:
        thread.start()
    go.set()
    for thread in threads:
        thread.join(60)
    assert errors == []
    assert [store.pop(f"q{n}", 0) for n in range(3)] == ["0", "0", "0"]
    store.close()


def test_health_names_a_lock_held_elsewhere_while_this_process_has_writers_waiting(
    tmp_path: Path,
) -> None:
    from host.store.records import ACTED, AuditRecord

    path = tmp_path / "store.db"
    store = open_store(f"sqlite:///{path}")
    holder = sqlite3.connect(path, isolation_level=None, timeout=5)
    holder.execute("BEGIN EXCLUSIVE")  # another process holds the file

    def writer() -> None:
        # NOTE: waits (up to a second) for the file's lock while holding this process's turn.
        with contextlib.suppress(StoreError):
            store.write_audit(AuditRecord("r", 0.0, "bob", "probe", "acted"), rank=ACTED, keep_s=60)

    waiting = threading.Thread(target=writer)
    try:
        waiting.start()
        time.sleep(0.2)
        reason = store.health()
    finally:
        holder.execute("ROLLBACK")
        holder.close()
        waiting.join()
        store.close()

    assert reason is not None and "database is locked" in reason
