"""The shared store: the same behaviour from the SQLite file and from a real redis-server."""

from __future__ import annotations

import multiprocessing
import os
import socket
import sqlite3
import sys
import threading
import time
from multiprocessing.queues import Queue
from multiprocessing.synchronize import Event
from pathlib import Path

import pytest

from host.errors import StoreError
from host.store import Store, open_store
from host.store.sqlite import SqliteStore

# NOTE: fork, so that children need not re-import this module, and so that a store opened before
# the fork (as under gunicorn's preload) is exercised in the child.
CTX = multiprocessing.get_context("fork")


# -- once ------------------------------------------------------------------------------------------


def test_once_across_50_threads_runs_compute_once(store: Store, key: str) -> None:
    calls: list[int] = []
    results: list[str] = []
    start = threading.Barrier(50)

    def compute() -> str:
        calls.append(1)
        time.sleep(0.2)  # long enough that every other thread arrives while it runs
        return "the value"

    def worker() -> None:
        start.wait()
        results.append(store.once(key, 30, compute))

    threads = [threading.Thread(target=worker) for _ in range(50)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=20)
    assert len(calls) == 1
    assert results == ["the value"] * 50


def _once_in_child(url: str, key: str, log: str, go: Event, out: Queue[str]) -> None:
    store = open_store(url)

    def compute() -> str:
        with open(log, "a") as file:
            file.write(f"{os.getpid()}\n")
        time.sleep(0.3)
        return f"done by {os.getpid()}"

    go.wait(10)
    out.put(store.once(key, 30, compute))
    store.close()


def test_once_across_8_processes_runs_compute_once(
    store_url: str, key: str, tmp_path: Path
) -> None:
    log = tmp_path / "side-effects.log"
    go, out = CTX.Event(), CTX.Queue()
    procs = [
        CTX.Process(target=_once_in_child, args=(store_url, key, str(log), go, out))
        for _ in range(8)
    ]
    for proc in procs:
        proc.start()
    go.set()
    results = [out.get(timeout=20) for _ in procs]
    for proc in procs:
        proc.join(timeout=10)
        assert proc.exitcode == 0
    pids = log.read_text().split()
    assert len(pids) == 1
    assert results == [f"done by {pids[0]}"] * 8


def test_once_replays_the_recorded_value(store: Store, key: str) -> None:
    assert store.once(key, 30, lambda: "first") == "first"
    assert store.once(key, 30, lambda: "second") == "first"
    assert store.get(key) == "first"


def test_once_compute_raising_releases_the_claim(store: Store, key: str) -> None:
    def fail() -> str:
        raise RuntimeError("the act failed")

    with pytest.raises(RuntimeError, match="the act failed"):
        store.once(key, 30, fail)
    assert store.get(key) is None
    assert store.once(key, 30, lambda: "retried", wait_s=1) == "retried"


def test_once_waiter_takes_over_when_the_winner_fails(store: Store, key: str) -> None:
    claimed = threading.Event()
    errors: list[BaseException] = []

    def fail_slowly() -> str:
        claimed.set()
        time.sleep(0.3)
        raise RuntimeError("the act failed")

    def winner() -> None:
        try:
            store.once(key, 30, fail_slowly)
        except RuntimeError as exc:
            errors.append(exc)

    thread = threading.Thread(target=winner)
    thread.start()
    assert claimed.wait(5)
    # This caller waits for the winner, sees its claim released, and runs its own compute.
    assert store.once(key, 30, lambda: "second try", wait_s=3) == "second try"
    thread.join(5)
    assert len(errors) == 1


def test_once_compute_returning_non_text_is_a_type_error(store: Store, key: str) -> None:
    with pytest.raises(TypeError, match="must return str"):
        store.once(key, 30, lambda: 42)  # type: ignore[arg-type,return-value]
    assert store.once(key, 30, lambda: "ok", wait_s=1) == "ok"


def test_once_value_expires_with_its_ttl(store: Store, key: str) -> None:
    assert store.once(key, 0.2, lambda: "old") == "old"
    time.sleep(0.3)
    assert store.get(key) is None
    assert store.once(key, 0.2, lambda: "new") == "new"


def test_once_gives_up_waiting_after_wait_s(store: Store, key: str) -> None:
    claimed = threading.Event()

    def slow() -> str:
        claimed.set()
        time.sleep(2.0)
        return "slow value"

    thread = threading.Thread(target=store.once, args=(key, 30, slow))
    thread.start()
    assert claimed.wait(5)
    assert store.get(key) is None  # an act that is running has no value yet
    began = time.monotonic()
    with pytest.raises(StoreError, match="waiting for another worker"):
        store.once(key, 30, lambda: "must not run", wait_s=0.2)
    assert 0.15 < time.monotonic() - began < 1.5
    thread.join(5)
    assert store.get(key) == "slow value"


def test_once_rejects_a_bad_ttl(store: Store, key: str) -> None:
    with pytest.raises(ValueError, match="ttl_s"):
        store.once(key, 0, lambda: "x")


# -- records ---------------------------------------------------------------------------------------


def test_add_inserts_only_once(store: Store, key: str) -> None:
    assert store.add(key, "first", 30) is True
    assert store.add(key, "second", 30) is False
    assert store.get(key) == "first"


def test_add_succeeds_again_after_expiry(store: Store, key: str) -> None:
    assert store.add(key, "first", 0.2) is True
    time.sleep(0.3)
    assert store.add(key, "second", 30) is True
    assert store.get(key) == "second"


def test_add_from_many_threads_has_one_winner(store: Store, key: str) -> None:
    wins: list[bool] = []
    start = threading.Barrier(20)

    def worker(n: int) -> None:
        start.wait()
        wins.append(store.add(key, str(n), 30))

    threads = [threading.Thread(target=worker, args=(n,)) for n in range(20)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(10)
    assert sorted(wins) == [False] * 19 + [True]


def test_get_put_delete(store: Store, key: str) -> None:
    assert store.get(key) is None
    store.put(key, "one", 30)
    store.put(key, "two", 30)
    assert store.get(key) == "two"
    store.delete(key)
    assert store.get(key) is None
    store.delete(key)  # deleting what is absent is fine


def test_put_expires_with_its_ttl(store: Store, key: str) -> None:
    store.put(key, "short-lived", 0.5)
    assert store.get(key) == "short-lived"
    time.sleep(0.6)
    assert store.get(key) is None


def test_records_and_queues_are_separate(store: Store, key: str) -> None:
    store.put(key, "record", 30)
    store.push(key, "queued", 30)
    assert store.get(key) == "record"
    assert store.pop(key, 0) == "queued"


# -- queues ----------------------------------------------------------------------------------------


def test_push_pop_is_first_in_first_out(store: Store, key: str) -> None:
    for value in ("a", "b", "c"):
        store.push(key, value, 30)
    assert [store.pop(key, 1) for _ in range(3)] == ["a", "b", "c"]


def test_pop_times_out_with_none(store: Store, key: str) -> None:
    began = time.monotonic()
    assert store.pop(key, 0.3) is None
    assert 0.25 < time.monotonic() - began < 1.5
    began = time.monotonic()
    assert store.pop(key, 0) is None
    assert time.monotonic() - began < 0.2


def test_queue_expires_ttl_after_its_last_push(store: Store, key: str) -> None:
    store.push(key, "stale", 0.2)
    time.sleep(0.3)
    assert store.pop(key, 0) is None


def _push_later(url: str, key: str, delay_s: float, values: list[str]) -> None:
    store = open_store(url)
    time.sleep(delay_s)
    for value in values:
        store.push(key, value, 30)
    store.close()


def test_pop_blocks_until_another_process_pushes(store: Store, store_url: str, key: str) -> None:
    proc = CTX.Process(target=_push_later, args=(store_url, key, 0.4, ["relayed"]))
    began = time.monotonic()
    proc.start()
    assert store.pop(key, 10) == "relayed"
    assert time.monotonic() - began > 0.35
    proc.join(10)
    assert proc.exitcode == 0


def _pop_in_child(url: str, key: str, out: Queue[str | None]) -> None:
    store = open_store(url)
    out.put(store.pop(key, 10))
    store.close()


def test_each_pushed_value_reaches_one_popper(store: Store, store_url: str, key: str) -> None:
    out: Queue[str | None] = CTX.Queue()
    procs = [CTX.Process(target=_pop_in_child, args=(store_url, key, out)) for _ in range(4)]
    for proc in procs:
        proc.start()
    time.sleep(0.3)  # let the children start waiting
    for n in range(4):
        store.push(key, f"v{n}", 30)
    results = [out.get(timeout=15) for _ in procs]
    for proc in procs:
        proc.join(10)
        assert proc.exitcode == 0
    assert sorted(r or "" for r in results) == ["v0", "v1", "v2", "v3"]


def _put_in_child(store: Store, key: str) -> None:
    store.put(key, f"from {os.getpid()}", 30)


def test_a_store_opened_before_fork_works_in_the_child(store: Store, key: str) -> None:
    store.put(key, "parent", 30)  # the parent has a live connection now
    proc = CTX.Process(target=_put_in_child, args=(store, key))
    proc.start()
    proc.join(10)
    assert proc.exitcode == 0
    assert store.get(key) == f"from {proc.pid}"


def test_store_satisfies_the_protocol(store: Store) -> None:
    assert isinstance(store, Store)


def test_closed_store_refuses_use(store_url: str, key: str) -> None:
    store = open_store(store_url)
    store.close()
    with pytest.raises(StoreError, match="closed"):
        store.get(key)


# -- URLs and backend specifics --------------------------------------------------------------------


def test_unknown_scheme_names_it_and_the_accepted_ones() -> None:
    with pytest.raises(StoreError) as caught:
        open_store("memcached://127.0.0.1:11211")
    message = str(caught.value)
    assert "'memcached://'" in message
    assert all(scheme in message for scheme in ("sqlite://", "redis://", "rediss://"))


def test_url_without_scheme_is_refused() -> None:
    with pytest.raises(StoreError, match="no scheme"):
        open_store("/var/lib/host/store.db")


@pytest.mark.parametrize(
    "url",
    ["sqlite://", "sqlite:///", "sqlite://host/x.db", "sqlite:///:memory:", "sqlite:///a?x=1"],
)
def test_bad_sqlite_urls_are_refused(url: str) -> None:
    with pytest.raises(StoreError, match=r"SQLite|in-memory"):
        open_store(url)


def test_sqlite_url_paths_follow_the_sqlalchemy_convention(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    relative = open_store("sqlite:///data/relative.db")
    absolute = open_store(f"sqlite:///{tmp_path / 'absolute.db'}")  # four slashes in all
    relative.put("k", "v", 30)
    absolute.put("k", "v", 30)
    relative.close()
    absolute.close()
    assert (tmp_path / "data" / "relative.db").is_file()
    assert (tmp_path / "absolute.db").is_file()


def test_sqlite_uses_wal_and_sweeps_expired_rows(tmp_path: Path) -> None:
    path = tmp_path / "store.db"
    store = SqliteStore(path, sweep_every_s=0)
    store.put("old", "x", 0.05)
    store.push("queue", "x", 0.05)
    time.sleep(0.1)
    store.put("new", "y", 30)
    store.close()
    with sqlite3.connect(path) as conn:
        assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
        assert conn.execute("SELECT key FROM store_records").fetchall() == [("new",)]
        assert conn.execute("SELECT count(*) FROM store_queue").fetchone()[0] == 0


def test_sqlite_file_that_is_not_a_database_is_a_store_error(tmp_path: Path) -> None:
    path = tmp_path / "junk.db"
    path.write_bytes(b"this is not a database, just some text that is long enough" * 20)
    with pytest.raises(StoreError, match=r"junk\.db"):
        open_store(f"sqlite:///{path}")


def test_redis_without_redis_py_says_how_to_install(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "redis", None)  # makes `import redis` fail
    with pytest.raises(StoreError, match=r"pip install 'host\[redis\]'"):
        open_store("redis://127.0.0.1:6379/0")


def test_unreachable_redis_is_a_store_error_without_the_password() -> None:
    with socket.socket() as sock:  # bound but not listening: connections are refused
        sock.bind(("127.0.0.1", 0))
        url = f"redis://user:s3cret@127.0.0.1:{sock.getsockname()[1]}/0"
        with pytest.raises(StoreError) as caught:
            open_store(url)
    assert "127.0.0.1" in str(caught.value)
    assert "s3cret" not in str(caught.value)
