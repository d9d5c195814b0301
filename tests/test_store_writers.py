"""Writers of one process take turns before they ask SQLite for its write lock.

SQLite's busy handler polls with sleeps and serves nobody in order: with hundreds of threads of one
worker writing at once (a burst of answers to open legacy questions), some waited past the busy
timeout and their requests failed with "database is locked" while others wrote. Now a process's
writers queue on a lock of their own, so SQLite only arbitrates between processes.
"""

from __future__ import annotations

import threading
from pathlib import Path

import pytest

from host.errors import StoreError
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
