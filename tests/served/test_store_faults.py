"""Act claims under faults, against real processes: killed and stalled owners, a Redis stopped and
restarted (with and without persistence), and a store file deleted, replaced or made unwritable.

Every test asks the attacker's question: can a retry ever run the act a second time, or wait
without end? The answers must be "never" and "no": a claim is running, done or lost, never free.
"""

from __future__ import annotations

import multiprocessing
import os
import shutil
import signal
import sqlite3
import tempfile
import time
from collections.abc import Callable, Iterator
from multiprocessing.queues import Queue
from multiprocessing.synchronize import Event
from pathlib import Path

import pytest

from host.errors import StoreError
from host.store import (
    VOLATILE_OK,
    ActClaim,
    ActState,
    Store,
    open_store,
    private_dir,
    require_durable,
)
from host.store.sqlite import SqliteBackend
from support.freezing import frozen
from support.redis import RedisServer

CTX = multiprocessing.get_context("fork")
LEASE_S = 1.0


def _claim(store: Store, key: str, incident: str = "inc-1") -> ActClaim:
    claim = store.claim_act(key, ttl_s=60, incident=incident)
    assert isinstance(claim, ActClaim), claim
    return claim


def _lost(state: ActState | None, incident: str) -> ActState:
    assert state is not None and state.status == "lost", state
    assert state.incident == incident
    return state


# -- owners that die or stall ----------------------------------------------------------------------


def _claim_and_hang(url: str, key: str, out: Queue[str]) -> None:
    store = open_store(url, lease_s=LEASE_S)
    claim = store.claim_act(key, ttl_s=60, incident="inc-killed")
    out.put("claimed" if isinstance(claim, ActClaim) else "refused")
    time.sleep(60)  # the act "runs" until the test kills this process


def _try_claim(url: str, key: str, out: Queue[ActState | str]) -> None:
    store = open_store(url)
    got = store.claim_act(key, ttl_s=60, incident="inc-retry")
    out.put(got if isinstance(got, ActState) else "CLAIMED AGAIN")
    store.close()


def test_owner_killed_mid_act_reads_lost_within_seconds_and_is_never_claimed_again(
    store: Store, store_url: str, key: str
) -> None:
    out: Queue[str] = CTX.Queue()
    owner = CTX.Process(target=_claim_and_hang, args=(store_url, key, out))
    owner.start()
    try:
        assert out.get(timeout=10) == "claimed"
        time.sleep(2 * LEASE_S)  # the owner's keeper renews: still running after two leases
        assert store.act_state(key) == ActState("running", None, "inc-killed")
        assert owner.pid is not None
        os.kill(owner.pid, signal.SIGKILL)
        killed = time.monotonic()
        state = _lost(store.wait_act(key, 15), "inc-killed")
        assert time.monotonic() - killed < LEASE_S + 3
        assert state.reason is not None and "stopped renewing" in state.reason
    finally:
        owner.kill()
        owner.join(10)
    # Retries in this process and in a fresh one: lost, with the first incident, never claimed.
    assert store.claim_act(key, ttl_s=60, incident="inc-retry") == state
    answers: Queue[ActState | str] = CTX.Queue()
    retry = CTX.Process(target=_try_claim, args=(store_url, key, answers))
    retry.start()
    assert answers.get(timeout=10) == state
    retry.join(10)


def _claim_then_fork(url: str, key: str, out: Queue[int]) -> None:
    store = open_store(url, lease_s=LEASE_S)
    _claim(store, key, incident="inc-parent")
    child = os.fork()
    if child == 0:  # the grandchild: inherits the store object, claims an act of its own, lives
        _claim(store, f"{key}-grandchild", incident="inc-grandchild")
        time.sleep(30)
        os._exit(0)
    out.put(child)
    time.sleep(60)


def test_a_forked_child_does_not_keep_its_parents_claims_alive(
    store: Store, store_url: str, key: str
) -> None:
    out: Queue[int] = CTX.Queue()
    owner = CTX.Process(target=_claim_then_fork, args=(store_url, key, out))
    owner.start()
    grandchild = out.get(timeout=10)
    try:
        assert owner.pid is not None
        os.kill(owner.pid, signal.SIGKILL)
        _lost(store.wait_act(key, 15), "inc-parent")
        # The grandchild's keeper renews its own claim, and only that.
        assert store.act_state(f"{key}-grandchild") == ActState("running", None, "inc-grandchild")
    finally:
        owner.kill()
        os.kill(grandchild, signal.SIGKILL)  # first: it holds the pipe that join() watches
        owner.join(10)


def _claim_stall_record(url: str, key: str, go: Event, out: Queue[str]) -> None:
    store = open_store(url, lease_s=LEASE_S)
    claim = _claim(store, key, incident="inc-stalled")
    out.put("claimed")
    go.wait(30)
    try:
        claim.record("recorded after the stall")
        out.put("recorded")
    except StoreError as exc:
        out.put(f"failed: {exc}")
    store.close()


def test_a_stalled_owner_reads_lost_and_its_late_result_still_lands(
    store: Store, store_url: str, key: str
) -> None:
    go, out = CTX.Event(), CTX.Queue()
    owner = CTX.Process(target=_claim_stall_record, args=(store_url, key, go, out))
    owner.start()
    assert out.get(timeout=10) == "claimed"
    assert owner.pid is not None
    with frozen(owner.pid, store_url):  # a process frozen mid-act (swapped out, debugged)
        _lost(store.wait_act(key, 15), "inc-stalled")
        assert isinstance(store.claim_act(key, ttl_s=60, incident="retry"), ActState)
    # Awake again, the owner renews its claim: running, still its own, until it records.
    deadline = time.monotonic() + 10
    while (state := store.act_state(key)) and state.status != "running":
        assert time.monotonic() < deadline, state
        time.sleep(0.05)
    assert state == ActState("running", None, "inc-stalled")
    go.set()
    assert out.get(timeout=10) == "recorded"
    owner.join(10)
    assert store.act_state(key) == ActState("done", "recorded after the stall", "inc-stalled")


# -- Redis stopped and restarted -------------------------------------------------------------------


def test_redis_with_aof_keeps_claims_and_results_across_a_restart(
    redis_server: Callable[..., RedisServer], key: str
) -> None:
    server = redis_server("--appendonly", "yes", "--appendfsync", "always")
    store = open_store(server.url)
    other = None
    try:
        assert store.durability() == []
        running = _claim(store, f"{key}-running", incident="inc-running")
        _claim(store, f"{key}-done", incident="inc-done").record("the result")
        server.restart()
        other = open_store(server.url)
        assert other.act_state(f"{key}-done") == ActState("done", "the result", "inc-done")
        # The running claim survived: a retry is told about it, never handed it.
        found = other.claim_act(f"{key}-running", ttl_s=60, incident="retry")
        assert isinstance(found, ActState) and found.incident == "inc-running"
        running.record("finished after the restart")
        assert other.act_state(f"{key}-running") == ActState(
            "done", "finished after the restart", "inc-running"
        )
    finally:
        store.close()
        if other is not None:
            other.close()


def test_record_failing_while_redis_is_down_reads_lost_after_the_restart(
    redis_server: Callable[..., RedisServer], key: str
) -> None:
    server = redis_server("--appendonly", "yes", "--appendfsync", "always")
    store = open_store(server.url, lease_s=LEASE_S)
    other = None
    try:
        claim = _claim(store, key, incident="inc-unrecorded")
        server.stop()  # the act ran; now its result cannot be written
        with pytest.raises(StoreError, match="record"):
            claim.record("the lost result")
        server.start()
        other = open_store(server.url)
        state = _lost(other.wait_act(key, 15), "inc-unrecorded")
        for retry in (other, store):
            assert retry.claim_act(key, ttl_s=60, incident="retry") == state
    finally:
        store.close()
        if other is not None:
            other.close()


def test_a_result_redis_refuses_marks_the_act_lost_with_the_reason(
    redis_server: Callable[..., RedisServer], key: str
) -> None:
    server = redis_server("--proto-max-bulk-len", "1mb")  # Redis is up; the result is too big
    store = open_store(server.url)
    try:
        claim = _claim(store, key, incident="inc-too-big")
        with pytest.raises(StoreError):
            claim.record("x" * 2_000_000)
        state = _lost(store.act_state(key), "inc-too-big")
        assert state.reason is not None and "could not be recorded" in state.reason
        assert store.claim_act(key, ttl_s=60, incident="retry") == state
    finally:
        store.close()


def test_redis_without_persistence_is_refused_unless_acknowledged(
    redis_server: Callable[..., RedisServer], key: str
) -> None:
    server = redis_server()  # --save '' --appendonly no
    store = open_store(server.url)
    try:
        risks = store.durability()
        assert [risk.refuse for risk in risks] == [True]
        assert "memory only" in risks[0].message
        with pytest.raises(StoreError) as refused:
            require_durable(store, acknowledged=False)
        assert VOLATILE_OK in refused.value.message
        warnings = require_durable(store, acknowledged=True)
        assert len(warnings) == 1 and "acknowledged" in warnings[0]
        # What it warned of: a restart forgets the claim, so a retry could claim it again.
        _claim(store, key)
        server.restart()
        assert store.act_state(key) is None
    finally:
        store.close()


@pytest.mark.parametrize(
    ("args", "refuse", "words"),
    [
        (("--save", "60 1"), False, "up to 60s"),
        (("--appendonly", "yes"), False, "appendfsync everysec"),
        (("--appendonly", "yes", "--appendfsync", "no"), False, "appendfsync no"),
        (("--rename-command", "CONFIG", ""), True, "CONFIG GET is refused"),
        (
            ("--appendonly", "yes", "--appendfsync", "always", "--maxmemory", "100mb",
             "--maxmemory-policy", "volatile-lru"),
            True,
            "evicts keys",
        ),
    ],
)  # fmt: skip
def test_redis_durability_names_each_way_to_lose_claims(
    redis_server: Callable[..., RedisServer], args: tuple[str, ...], refuse: bool, words: str
) -> None:
    store = open_store(redis_server(*args).url)
    try:
        risks = store.durability()
        assert [(risk.refuse, words in risk.message) for risk in risks] == [(refuse, True)]
        if refuse:
            with pytest.raises(StoreError, match=VOLATILE_OK):
                require_durable(store, acknowledged=False)
        else:
            assert require_durable(store, acknowledged=False) == [risks[0].message]
    finally:
        store.close()


def test_redis_health_says_when_it_is_down(
    redis_server: Callable[..., RedisServer],
) -> None:
    server = redis_server()
    store = open_store(server.url)
    try:
        assert store.health() is None
        server.stop()
        reason = store.health()
        assert reason is not None and f"127.0.0.1:{server.port}" in reason
        server.start()
        assert store.health() is None
    finally:
        store.close()


# -- the SQLite file deleted, replaced or made unwritable ------------------------------------------


def test_sqlite_file_deleted_while_open_refuses_claims_and_writes(tmp_path: Path) -> None:
    path = tmp_path / "store.db"
    store = Store(SqliteBackend(path))
    _claim(store, "before").record("done before")
    assert store.health() is None
    for name in ("store.db", "store.db-wal", "store.db-shm"):
        (tmp_path / name).unlink(missing_ok=True)  # rm store.db*
    with pytest.raises(StoreError, match="deleted"):
        store.claim_act("after", ttl_s=60, incident="inc")
    with pytest.raises(StoreError, match="deleted"):
        store.put("record", "x", 60)
    health = store.health()
    assert health is not None and "deleted" in health
    assert [risk.refuse for risk in store.durability()] == [True]
    assert not path.exists()  # a pooled connection never creates a new file in its place
    # A worker started now gets a new, empty file; this one keeps refusing, even with it there.
    newcomer = Store(SqliteBackend(path))
    try:
        assert newcomer.health() is None
        with pytest.raises(StoreError, match="deleted"):
            store.claim_act("after", ttl_s=60, incident="inc")
    finally:
        newcomer.close()
        store.close()


def test_sqlite_file_replaced_while_open_refuses_claims(tmp_path: Path) -> None:
    path = tmp_path / "store.db"
    store = Store(SqliteBackend(path))
    Store(SqliteBackend(tmp_path / "other.db")).close()
    os.replace(tmp_path / "other.db", path)  # e.g. a backup restored over it
    try:
        with pytest.raises(StoreError, match="replaced"):
            store.claim_act("act", ttl_s=60, incident="inc")
        health = store.health()
        assert health is not None and "replaced" in health
    finally:
        store.close()


@pytest.fixture
def nobodys_folder() -> Iterator[Path]:
    """A folder owned by an unprivileged user when running as root (root ignores file modes)."""
    folder = Path(tempfile.mkdtemp(prefix="host-store-"))
    if os.geteuid() == 0:
        os.chown(folder, 65534, 65534)
    try:
        yield folder
    finally:
        os.chmod(folder, 0o700)
        shutil.rmtree(folder, ignore_errors=True)


def _health_after(folder: str, what: str, out: Queue[tuple[str | None, str | None]]) -> None:
    if os.geteuid() == 0:
        os.setgid(65534)
        os.setuid(65534)
    store = Store(SqliteBackend(Path(folder) / "store.db"))
    before = store.health()
    if what == "folder":
        os.chmod(folder, 0o500)
    else:
        os.chmod(Path(folder) / "store.db", 0o400)
    out.put((before, store.health()))
    store.close()


@pytest.mark.parametrize("what", ["file", "folder"])
def test_sqlite_store_made_unwritable_is_unhealthy(nobodys_folder: Path, what: str) -> None:
    out: Queue[tuple[str | None, str | None]] = CTX.Queue()
    proc = CTX.Process(target=_health_after, args=(str(nobodys_folder), what, out))
    proc.start()
    before, after = out.get(timeout=20)
    proc.join(10)
    assert before is None
    assert after is not None and ("readonly" in after or "not writable" in after), after


# -- files -----------------------------------------------------------------------------------------


def test_sqlite_store_files_are_private_whatever_the_umask(tmp_path: Path) -> None:
    old = os.umask(0)
    try:
        store = Store(SqliteBackend(tmp_path / "new" / "store.db"))
        store.put("k", "v", 60)
    finally:
        os.umask(old)
    try:
        assert (tmp_path / "new").stat().st_mode & 0o777 == 0o700
        for name in ("store.db", "store.db-wal", "store.db-shm"):
            assert (tmp_path / "new" / name).stat().st_mode & 0o777 == 0o600, name
    finally:
        store.close()


def test_an_existing_readable_store_file_is_made_private(tmp_path: Path) -> None:
    path = tmp_path / "store.db"
    sqlite3.connect(path).close()
    path.chmod(0o644)
    Store(SqliteBackend(path)).close()
    assert path.stat().st_mode & 0o777 == 0o600


def test_private_dir_creates_tightens_and_leaves_shared_folders_alone(tmp_path: Path) -> None:
    old = os.umask(0)
    try:
        made = private_dir(tmp_path / "a" / "data")
    finally:
        os.umask(old)
    assert made.stat().st_mode & 0o777 == 0o700
    loose = tmp_path / "loose"
    loose.mkdir(mode=0o755)
    private_dir(loose)
    assert loose.stat().st_mode & 0o777 == 0o700
    shared = tmp_path / "shared"
    shared.mkdir()
    shared.chmod(0o1777)  # like /tmp: never made private
    private_dir(shared)
    assert shared.stat().st_mode & 0o7777 == 0o1777
    (tmp_path / "file").write_text("x")
    with pytest.raises(NotADirectoryError):
        private_dir(tmp_path / "file")
