"""Act claims: one caller runs an act, everyone else learns running, done or lost; both backends.

The faults (a killed owner, a stopped Redis, a replaced file) are in test_store_faults.py; here the
claims behave as promised while nothing fails, and a closed store's claims lapse to ``lost``.
"""

from __future__ import annotations

import multiprocessing
import threading
import time
from multiprocessing.queues import Queue
from multiprocessing.synchronize import Event
from pathlib import Path

import pytest

from host.store import ActClaim, ActState, Store, open_store

CTX = multiprocessing.get_context("fork")


def _claim(store: Store, key: str, incident: str = "inc-1", ttl_s: float = 30) -> ActClaim:
    claim = store.claim_act(key, ttl_s=ttl_s, incident=incident)
    assert isinstance(claim, ActClaim), claim
    return claim


def test_first_caller_claims_and_others_see_it_running(store: Store, key: str) -> None:
    assert store.act_state(key) is None
    claim = _claim(store, key, incident="first")
    assert claim.key == key and claim.incident == "first"
    again = store.claim_act(key, ttl_s=30, incident="second")
    # The incident was fixed by the claim: a later caller's id is not taken.
    assert again == ActState("running", None, "first")
    assert store.act_state(key) == ActState("running", None, "first")


def test_recorded_result_is_done_for_everyone(store: Store, key: str) -> None:
    claim = _claim(store, key)
    claim.record('{"ok": true}')
    assert store.act_state(key) == ActState("done", '{"ok": true}', "inc-1")
    assert store.claim_act(key, ttl_s=30, incident="other") == ActState(
        "done", '{"ok": true}', "inc-1"
    )


def test_a_claim_records_once(store: Store, key: str) -> None:
    claim = _claim(store, key)
    with pytest.raises(TypeError, match="must be str"):
        claim.record(42)  # type: ignore[arg-type]
    claim.record("first")
    with pytest.raises(RuntimeError, match="already"):
        claim.record("second")
    assert store.act_state(key) == ActState("done", "first", "inc-1")


def test_50_threads_get_one_claim(store: Store, key: str) -> None:
    start = threading.Barrier(50)
    got: list[ActClaim | ActState] = []

    def worker(n: int) -> None:
        start.wait()
        got.append(store.claim_act(key, ttl_s=30, incident=f"inc-{n}"))

    threads = [threading.Thread(target=worker, args=(n,)) for n in range(50)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(20)
    claims = [each for each in got if isinstance(each, ActClaim)]
    assert len(claims) == 1 and len(got) == 50
    assert {each for each in got if isinstance(each, ActState)} == {
        ActState("running", None, claims[0].incident)
    }


def _claim_in_child(url: str, key: str, n: int, go: Event, out: Queue[str]) -> None:
    store = open_store(url)
    go.wait(10)
    got = store.claim_act(key, ttl_s=30, incident=f"inc-{n}")
    if isinstance(got, ActState):
        out.put(got.status)
    else:
        got.record(f"done by {n}")
        out.put("claimed")
    store.close()


def test_8_processes_get_one_claim(store: Store, store_url: str, key: str) -> None:
    go, out = CTX.Event(), CTX.Queue()
    procs = [
        CTX.Process(target=_claim_in_child, args=(store_url, key, n, go, out)) for n in range(8)
    ]
    for proc in procs:
        proc.start()
    go.set()
    results = sorted(out.get(timeout=20) for _ in procs)
    for proc in procs:
        proc.join(10)
        assert proc.exitcode == 0
    assert results.count("claimed") == 1
    assert set(results) <= {"claimed", "running", "done"}
    state = store.act_state(key)
    assert state is not None and state.status == "done"
    assert state.value is not None and state.value.startswith("done by ")


def test_wait_act_returns_once_the_result_is_recorded(store: Store, key: str) -> None:
    claim = _claim(store, key)
    timer = threading.Timer(0.3, claim.record, args=("late result",))
    timer.start()
    began = time.monotonic()
    assert store.wait_act(key, 10) == ActState("done", "late result", "inc-1")
    assert 0.25 < time.monotonic() - began < 5
    timer.join()


def test_wait_act_gives_up_with_the_running_state(store: Store, key: str) -> None:
    _claim(store, key)
    began = time.monotonic()
    assert store.wait_act(key, 0.3) == ActState("running", None, "inc-1")
    assert 0.25 < time.monotonic() - began < 2
    assert store.wait_act(f"{key}-never-claimed", 5) is None


def test_a_live_owner_keeps_its_claim_past_many_leases(store_url: str, key: str) -> None:
    owner = open_store(store_url, lease_s=0.6)
    other = open_store(store_url)
    try:
        claims = [_claim(owner, f"{key}-{n}") for n in range(600)]  # more than one renewal batch
        time.sleep(2.0)  # about three leases
        assert {other.act_state(f"{key}-{n}") for n in (0, 299, 599)} == {
            ActState("running", None, "inc-1")
        }
        claims[0].record("finally")
        assert other.act_state(f"{key}-0") == ActState("done", "finally", "inc-1")
    finally:
        owner.close()
        other.close()


def test_a_closed_stores_claims_lapse_to_lost_and_are_never_taken(store_url: str, key: str) -> None:
    owner = open_store(store_url, lease_s=0.3)
    other = open_store(store_url)
    try:
        _claim(owner, key, incident="inc-owner")
        owner.close()  # its keeper stops: nobody renews the lease any more
        state = other.wait_act(key, 5)
        assert state is not None and state.status == "lost"
        assert state.incident == "inc-owner"
        assert state.reason is not None and "stopped renewing" in state.reason
        # Never free again: every later caller learns it was lost, with the same incident.
        for n in range(3):
            assert other.claim_act(key, ttl_s=30, incident=f"retry-{n}") == state
    finally:
        other.close()


def test_a_done_act_expires_with_its_ttl(store: Store, key: str) -> None:
    _claim(store, key, ttl_s=0.3).record("old")
    assert store.act_state(key) == ActState("done", "old", "inc-1")
    time.sleep(0.45)
    assert store.act_state(key) is None
    _claim(store, key, incident="inc-2").record("new")
    assert store.act_state(key) == ActState("done", "new", "inc-2")


def test_a_running_claim_outlives_its_ttl_while_its_owner_lives(store_url: str, key: str) -> None:
    owner = open_store(store_url, lease_s=0.3)
    try:
        claim = _claim(owner, key, ttl_s=0.2)
        time.sleep(0.8)  # the act runs longer than ttl_s: the renewals keep its record alive
        assert owner.claim_act(key, ttl_s=0.2, incident="late") == ActState(
            "running", None, "inc-1"
        )
        claim.record("slow but sure")
        assert owner.act_state(key) == ActState("done", "slow but sure", "inc-1")
    finally:
        owner.close()


def test_act_keys_are_their_own_namespace(store: Store, key: str) -> None:
    store.put(key, "a record", 30)
    assert store.act_state(key) is None
    _claim(store, key).record("an act")
    assert store.get(key) == "a record"


@pytest.mark.parametrize(
    ("ttl_s", "incident", "match"),
    [(0, "inc", "ttl_s"), (float("nan"), "inc", "ttl_s"), (30, "", "incident")],
)
def test_bad_claim_arguments_are_programming_errors(
    store: Store, key: str, ttl_s: float, incident: str, match: str
) -> None:
    with pytest.raises(ValueError, match=match):
        store.claim_act(key, ttl_s=ttl_s, incident=incident)


def test_bad_lease_is_refused(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="lease_s"):
        open_store(f"sqlite:///{tmp_path / 'store.db'}", lease_s=0)


def test_sqlite_commits_a_claim_and_its_result_with_fsync(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from host.store.sqlite_pool import Connections

    levels: list[int] = []
    write = Connections.write

    def spy(self: Connections, **kwargs: object):  # type: ignore[no-untyped-def]
        cm = write(self, **kwargs)  # type: ignore[arg-type]

        class Watch:
            def __enter__(self) -> object:
                conn = cm.__enter__()
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
    from host.store.sqlite_pool import Connections

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
