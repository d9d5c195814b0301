"""What only the SQLite backend does: its URLs, WAL and sweeps, fsync'd group commits of claims,
and writers of one process taking turns before they ask SQLite for its write lock.

SQLite's busy handler polls with sleeps and serves nobody in order: with hundreds of threads of one
worker writing at once (a burst of answers to open legacy questions), some waited past the busy
timeout and their requests failed with "database is locked" while others wrote. Now a process's
writers queue on a lock of their own, so SQLite only arbitrates between processes.
"""

from __future__ import annotations

import contextlib
import json
import sqlite3
import threading
import time
from pathlib import Path

import pytest

from host.errors import StoreError
from host.store import ActClaim, ActState, Store, open_store
from host.store.sqlite import SqliteBackend


def _claim(store: Store, key: str, incident: str = "inc-1", ttl_s: float = 30) -> ActClaim:
    claim = store.claim_act(key, ttl_s=ttl_s, incident=incident)
    assert isinstance(claim, ActClaim), claim
    return claim


# -- URLs and files --------------------------------------------------------------------------------


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
    store = Store(SqliteBackend(path, sweep_every_s=0))
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


# -- durable claims --------------------------------------------------------------------------------


def test_sqlite_commits_a_claim_and_its_result_with_fsync(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from host.store.sqlite.pool import Connections

    levels: list[int] = []
    write = Connections.write

    def spy(self: Connections, **kwargs: object):  # type: ignore[no-untyped-def]
        cm = write(self, **kwargs)  # type: ignore[arg-type]

        class Watch:
            def __enter__(self) -> object:
                conn = cm.__enter__()
                # NOTE: the lease keeper's renewal (its own thread) may come between the two.
                if threading.current_thread().name != "host-store-leases":
                    levels.append(conn.execute("PRAGMA synchronous").fetchone()[0])
                return conn

            def __exit__(self, *exc: object) -> object:
                return cm.__exit__(*exc)  # type: ignore[arg-type]

        return Watch()

    monkeypatch.setattr(Connections, "write", spy)
    store = open_store(f"sqlite:///{tmp_path / 'store.db'}")
    try:
        claim = _claim(store, "act:k")
        claim.record("done")
    finally:
        store.close()

    assert levels == [2, 2]  # FULL for the claim and for its result


def test_sqlite_claims_made_at_once_share_transactions_and_each_is_decided_alone(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from host.store.sqlite.pool import Connections

    durable: list[int] = []
    write = Connections.write

    def counted(self: Connections, **kwargs: object):  # type: ignore[no-untyped-def]
        if kwargs.get("durable"):
            durable.append(1)
        return write(self, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(Connections, "write", counted)
    store = open_store(f"sqlite:///{tmp_path / 'store.db'}")
    start = threading.Barrier(40)
    results: dict[int, ActClaim | ActState] = {}

    def claim(n: int) -> None:
        start.wait()
        # Half the threads race for one key; the others each claim a key of their own.
        key = "act:shared" if n % 2 else f"act:own-{n}"
        results[n] = store.claim_act(key, ttl_s=30, incident=f"inc-{n}")

    try:
        threads = [threading.Thread(target=claim, args=(n,)) for n in range(40)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(30)
        shared = [r for n, r in results.items() if n % 2]
        own = [r for n, r in results.items() if not n % 2]
        assert len(results) == 40
        assert all(isinstance(r, ActClaim) for r in own)
        [winner] = [r for r in shared if isinstance(r, ActClaim)]
        assert all(
            r == ActState("running", None, winner.incident) for r in shared if r is not winner
        )
        assert len(durable) < 40  # claims that came together were committed together
    finally:
        store.close()


def test_sqlite_claims_waiting_together_all_fail_when_the_store_does(tmp_path: Path) -> None:
    from host.errors import StoreError

    path = tmp_path / "store.db"
    store = open_store(f"sqlite:///{path}")
    start = threading.Barrier(20)
    outcomes: list[str] = []

    def claim(n: int) -> None:
        start.wait()
        try:
            store.claim_act(f"act:{n}", ttl_s=30, incident=f"inc-{n}")
            outcomes.append("claimed")
        except StoreError:
            outcomes.append("refused")

    try:
        path.unlink()  # the file is gone under the running store: every write is refused
        threads = [threading.Thread(target=claim, args=(n,)) for n in range(20)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(30)
        assert not any(thread.is_alive() for thread in threads)  # no waiter left hanging
        assert outcomes == ["refused"] * 20
    finally:
        store.close()


# -- writers taking turns --------------------------------------------------------------------------


def test_a_writer_waits_for_its_turn_in_the_process_not_in_sqlite(tmp_path: Path) -> None:
    backend = SqliteBackend(tmp_path / "store.db", busy_timeout_s=0.3)
    store = Store(backend)
    pool = backend.pool
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
    store = Store(SqliteBackend(tmp_path / "store.db", busy_timeout_s=10.0))
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


def test_a_store_file_from_before_keeps_working_without_its_owner_indexes(tmp_path: Path) -> None:
    """Claims and locks are renewed by key now; the indexes on their owners are dropped."""
    path = tmp_path / "old.db"
    open_store(f"sqlite:///{path}").close()
    with contextlib.closing(sqlite3.connect(path)) as conn:  # as an earlier version left it
        conn.execute("CREATE INDEX store_acts_owner ON store_acts (owner)")
        conn.execute("CREATE INDEX store_locks_owner ON store_locks (owner)")
        conn.commit()

    store = open_store(f"sqlite:///{path}")
    try:
        claim = _claim(store, "act:old")
        claim.record('{"done": true}')
        state = store.act_state("act:old")
        assert isinstance(state, ActState) and state.status == "done"
    finally:
        store.close()
    with contextlib.closing(sqlite3.connect(path)) as conn:
        names = {row[0] for row in conn.execute("SELECT name FROM sqlite_master")}
    assert not names & {"store_acts_owner", "store_locks_owner"}


# -- the audit chain's writes ----------------------------------------------------------------------


def test_two_processes_take_the_newest_checkpoint_from_each_other(tmp_path: Path) -> None:
    """Each store remembers the head it linked last, with its checkpoint; one that finds the
    head moved (another process wrote, a checkpoint among it) reads the checkpoint again."""
    from host.store.chain_check import check_chain
    from host.store.records import ENDED, AuditRecord
    from host.store.signing import Signer

    key = Signer.derived("s" * 32)
    stores = [Store(SqliteBackend(tmp_path / "store.db", busy_timeout_s=5.0)) for _ in "ab"]
    for store in stores:
        store.sign_checkpoints(key, every=3)
    for n, writer in enumerate([0, 0, 1, 0, 1, 1, 1, 0, 0, 0]):
        record = AuditRecord(f"c{n}", time.time(), "alice", "t", "acted")
        stores[writer].write_audits([(record, ENDED)], keep_s=60)
    rows = stores[0].audit_entries(limit=100)
    kinds = [json.loads(body)["kind"] for _, body, _ in rows]
    # NOTE: a checkpoint first, then one after every three records, whoever wrote them.
    assert [n for n, kind in enumerate(kinds, 1) if kind == "checkpoint"] == [2, 6, 10, 14]
    assert check_chain(rows, key.public).problem is None
    for store in stores:
        store.close()


def test_an_audit_write_waits_its_own_time_and_leaves_the_usual_wait_alone(
    tmp_path: Path,
) -> None:
    from host.store.records import ENDED, AuditRecord
    from host.store.sqlite.audit import AUDIT_WAIT_S

    backend = SqliteBackend(tmp_path / "store.db", busy_timeout_s=7.0)
    store = Store(backend)
    store.write_audits([(AuditRecord("c1", time.time(), "a", "t", "acted"), ENDED)], keep_s=60)
    with backend.pool.write(wait_s=AUDIT_WAIT_S) as conn:
        assert conn.execute("PRAGMA busy_timeout").fetchone()[0] == AUDIT_WAIT_S * 1000
    with backend.pool.write() as conn:
        assert conn.execute("PRAGMA busy_timeout").fetchone()[0] == 7000
    store.close()


def test_one_read_gives_the_head_and_each_calls_newest_rank_across_processes(
    tmp_path: Path,
) -> None:
    """A batch reads the head and its calls' ranks in one statement: each call's newest entry
    decides (another process's included, past the 500 ids one read takes), and a store whose head
    was never kept links from its newest row."""
    from host.store.chain_check import check_chain
    from host.store.records import ACTED, ENDED, STARTED, AuditRecord

    backends = [SqliteBackend(tmp_path / "store.db", busy_timeout_s=5.0) for _ in "ab"]
    stores = [Store(backend) for backend in backends]

    def record(call: str, outcome: str = "acted") -> AuditRecord:
        return AuditRecord(call, time.time(), "alice", "t", outcome)

    stores[0].write_audits([(record("c1", "incident"), STARTED), (record("c1"), ACTED)], keep_s=60)
    stores[1].write_audits([(record("c2"), ENDED)], keep_s=60)
    with backends[0].pool.write() as conn:
        conn.execute("DELETE FROM store_audit_head")  # a store from before the head was kept
    stores[1].write_audits([(record("c1", "error"), ENDED)], keep_s=60)  # one call: one row read
    stores[1].write_audits([(record("c3"), ENDED)], keep_s=60)
    many = [(record(f"n{n:03}"), ENDED) for n in range(600)]
    batch = [*many, (record("c1", "error"), ENDED), (record("c2", "error"), ACTED)]
    stores[1].write_audits([*batch, (record("n599", "error"), ENDED)], keep_s=60)
    again = [(record(f"n{n:03}", "error"), ENDED) for n in range(600)]
    last = [(record("c1", "incident"), STARTED), (record("n000"), ACTED), *again]
    stores[0].write_audits(last, keep_s=60)
    rows = stores[0].audit_entries(limit=1000)
    kept = [(json.loads(body)["id"], json.loads(body)["outcome"]) for _, body, _ in rows]
    assert kept[:4] == [("c1", "incident"), ("c1", "acted"), ("c2", "acted"), ("c3", "acted")]
    assert kept[4:604] == [(f"n{n:03}", "acted") for n in range(600)]
    assert kept[604:] == [("c2", "error"), ("n000", "acted")]
    assert [seq for seq, _, _ in rows] == list(range(1, 607))
    assert check_chain(rows, None).problem is None
    for store in stores:
        store.close()
