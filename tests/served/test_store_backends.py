"""The store's backend suite: every test runs on a real SQLite file and on a real redis-server.

The ``store`` and ``store_url`` fixtures (tests/conftest.py) give each test a fresh SQLite file in
``tmp_path`` and then the session's redis-server (with ``appendonly yes``). One redis-server serves
the whole session, so every test names its own keys, principals and tools (``key`` is unique per
test). What only one backend does is in test_store_sqlite.py and test_store_redis.py; faults
(killed owners, a stopped Redis, a replaced file) in test_store_faults.py; waiting pops in
test_store_waiting.py.
"""

from __future__ import annotations

import multiprocessing
import os
import threading
import time
from multiprocessing.queues import Queue
from multiprocessing.synchronize import Event
from pathlib import Path

import pytest

from host.errors import StoreError
from host.store import ActClaim, ActState, Lock, Store, open_store
from host.store.asks import AskField, UrlAsk, new_ask_id
from host.store.records import ACTED, ENDED, AuditRecord, approval_id
from host.store.signing import Signer
from support.freezing import frozen

pytestmark = pytest.mark.served

# NOTE: fork, so that children need not re-import this module, and so that a store opened before
# the fork (as under gunicorn's preload) is exercised in the child.
CTX = multiprocessing.get_context("fork")


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


# -- the store as a whole --------------------------------------------------------------------------


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


def test_unknown_scheme_names_it_and_the_accepted_ones() -> None:
    with pytest.raises(StoreError) as caught:
        open_store("memcached://127.0.0.1:11211")
    message = str(caught.value)
    assert "'memcached://'" in message
    assert all(scheme in message for scheme in ("sqlite://", "redis://", "rediss://"))


def test_url_without_scheme_is_refused() -> None:
    with pytest.raises(StoreError, match="no scheme"):
        open_store("/var/lib/host/store.db")


# -- act claims ------------------------------------------------------------------------------------


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


# -- approvals -------------------------------------------------------------------------------------


def test_a_granted_approval_is_found_by_its_id_until_it_expires(store: Store, key: str) -> None:
    granted = store.grant_approval(f"{key}-alice", "restart", "confirm_it", "api/prod", 0.5)

    assert granted.id == approval_id(f"{key}-alice", "restart", "confirm_it", "api/prod")
    assert store.find_approval(granted.id) == granted
    assert granted.expires == pytest.approx(granted.granted + 0.5)
    time.sleep(0.6)
    assert store.find_approval(granted.id) is None
    assert store.approvals(principal=f"{key}-alice") == []


def test_an_approval_belongs_to_its_principal_tool_question_and_key(store: Store, key: str) -> None:
    store.grant_approval(f"{key}-alice", "restart", "go", "api", 60)

    for other in (
        approval_id(f"{key}-bob", "restart", "go", "api"),
        approval_id(f"{key}-alice", "deploy", "go", "api"),
        approval_id(f"{key}-alice", "restart", "again", "api"),
        approval_id(f"{key}-alice", "restart", "go", "web"),
    ):
        assert store.find_approval(other) is None


def test_a_new_yes_starts_a_new_duration(store: Store, key: str) -> None:
    first = store.grant_approval(key, "t", "q", "k", 0.3)
    second = store.grant_approval(key, "t", "q", "k", 60)

    assert second.id == first.id
    time.sleep(0.4)
    assert store.find_approval(first.id) == second
    assert [a.id for a in store.approvals(principal=key)] == [first.id]


def test_approvals_are_listed_and_revoked_by_id_principal_or_tool(store: Store, key: str) -> None:
    alice, bob = f"{key}-alice", f"{key}-bob"
    a1 = store.grant_approval(alice, f"{key}-restart", "q", "api", 60)
    a2 = store.grant_approval(alice, f"{key}-deploy", "q", "api", 60)
    b1 = store.grant_approval(bob, f"{key}-restart", "q", "api", 60)

    assert store.approvals(principal=alice) == [a1, a2]
    assert store.approvals(tool=f"{key}-restart") == [a1, b1]
    assert store.approvals(principal=bob, tool=f"{key}-deploy") == []

    assert store.revoke_approvals(approval=a2.id) == 1
    assert store.revoke_approvals(approval=a2.id) == 0
    assert store.find_approval(a2.id) is None
    assert store.revoke_approvals(tool=f"{key}-restart", principal=bob) == 1
    assert store.approvals(tool=f"{key}-restart") == [a1]
    assert store.revoke_approvals(principal=alice) == 1
    assert store.approvals(principal=alice) == []


def test_revoking_needs_something_to_match(store: Store) -> None:
    with pytest.raises(ValueError, match="needs an approval id"):
        store.revoke_approvals()


def test_approvals_survive_reopening_the_store(store_url: str, key: str) -> None:
    first = open_store(store_url)
    granted = first.grant_approval(key, "t", "q", "k", 60)
    first.close()
    again = open_store(store_url)
    try:
        assert again.find_approval(granted.id) == granted
    finally:
        again.close()


# -- audit records ---------------------------------------------------------------------------------


def _record(call: str, tool: str, principal: str, at: float, outcome: str = "acted") -> AuditRecord:
    return AuditRecord(
        call,
        at,
        principal,
        tool,
        outcome,
        arguments={"id": "T-1"},
        answers={"close": {"action": "accept", "content": {"confirm": True}}},
        approvals=({"question": "close", "via": "asked"},),
        acted=outcome == "acted",
        duration_s=0.25,
    )


def test_an_audit_record_reads_back_as_written(store: Store, key: str) -> None:
    record = _record(f"{key}-1", key, "alice", time.time())

    assert store.write_audit(record, rank=ACTED, keep_s=3600)
    assert store.audit_records(tool=key) == [record]


def test_one_record_per_call_and_the_acting_round_wins(store: Store, key: str) -> None:
    now = time.time()
    replay = _record(f"{key}-c", key, "alice", now, outcome="incident")
    acted = _record(f"{key}-c", key, "alice", now + 1)

    assert store.write_audit(replay, rank=ENDED, keep_s=3600)
    assert not store.write_audit(replay, rank=ENDED, keep_s=3600)
    assert store.write_audit(acted, rank=ACTED, keep_s=3600)
    assert not store.write_audit(replay, rank=ENDED, keep_s=3600)
    assert store.audit_records(tool=key) == [acted]


def test_a_claim_writes_its_audit_record_in_the_same_step(store: Store, key: str) -> None:
    # The record of a lost act goes with the act's claim: shown once its time has come (here,
    # already), replaced by the call's own record, and never written by a caller that lost the
    # race for the claim.
    lost = _record(f"{key}-lost", key, "alice", time.time() - 1, outcome="incident")
    claim = store.claim_act(key, ttl_s=30, incident="inc-1", audit=(lost, 3600))
    assert isinstance(claim, ActClaim)
    assert store.audit_records(tool=key) == [lost]

    other = _record(f"{key}-lost", key, "mallory", time.time() - 1, outcome="incident")
    assert isinstance(
        store.claim_act(key, ttl_s=30, incident="inc-2", audit=(other, 3600)), ActState
    )
    assert store.audit_records(tool=key) == [lost]

    acted = _record(f"{key}-lost", key, "alice", time.time())
    assert store.write_audit(acted, rank=ENDED, keep_s=3600)
    assert store.audit_records(tool=key) == [acted]


def test_a_lost_acts_record_is_hidden_until_its_time(store: Store, key: str) -> None:
    later = _record(f"{key}-later", key, "alice", time.time() + 0.5, outcome="incident")
    assert isinstance(store.claim_act(key, ttl_s=30, incident="inc", audit=(later, 3600)), ActClaim)
    assert store.audit_records(tool=key) == []
    time.sleep(0.6)
    assert store.audit_records(tool=key) == [later]


def test_concurrent_writers_of_one_call_leave_one_record(store: Store, key: str) -> None:
    start = threading.Barrier(20)

    def write(n: int) -> None:
        start.wait()
        store.write_audit(
            _record(f"{key}-same", key, f"p{n}", time.time()), rank=ENDED, keep_s=3600
        )

    threads = [threading.Thread(target=write, args=(n,)) for n in range(20)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(store.audit_records(tool=key)) == 1


def test_audit_records_are_filtered_newest_first(store: Store, key: str) -> None:
    now = time.time()
    tool, other = f"{key}-close", f"{key}-assign"
    written = [
        _record(f"{key}-1", tool, f"{key}-alice", now - 7200),
        _record(f"{key}-2", other, f"{key}-alice", now - 60),
        _record(f"{key}-3", tool, f"{key}-bob", now - 30),
        _record(f"{key}-4", tool, f"{key}-alice", now - 10),
    ]
    for record in written:
        store.write_audit(record, rank=ACTED, keep_s=86400)

    def ids(**filters: object) -> list[str]:
        return [r.id[len(key) + 1 :] for r in store.audit_records(**filters)]  # type: ignore[arg-type]

    assert ids(tool=tool) == ["4", "3", "1"]
    assert ids(principal=f"{key}-alice") == ["4", "2", "1"]
    assert ids(tool=tool, principal=f"{key}-alice") == ["4", "1"]
    assert ids(tool=tool, since=now - 3600) == ["4", "3"]
    assert ids(tool=tool, limit=1) == ["4"]
    assert ids(principal=f"{key}-alice", tool=tool, since=now - 20, limit=5) == ["4"]


def test_pruning_deletes_what_a_checkpoint_older_than_the_cutoff_follows(
    store: Store, key: str
) -> None:
    # The chain stays verifiable: it is cut just before a checkpoint, which then starts it.
    store.sign_checkpoints(Signer.derived("k" * 32), every=1)
    now = time.time()
    store.write_audit(_record(f"{key}-old", key, "alice", now - 100), rank=ACTED, keep_s=3600)
    cutoff = time.time() + 0.001
    while time.time() <= cutoff:
        time.sleep(0.001)
    store.write_audit(_record(f"{key}-new", key, "alice", now), rank=ACTED, keep_s=3600)

    assert store.prune_audit(cutoff) >= 1
    assert [r.id for r in store.audit_records(tool=key)] == [f"{key}-new"]
    assert store.audit_records(principal="alice", since=now - 1, limit=1000)
    entries = store.audit_entries(limit=1000)
    assert '"kind":"checkpoint"' in entries[0][1]


def test_a_bad_limit_is_a_programming_error(store: Store) -> None:
    with pytest.raises(ValueError, match="limit"):
        store.audit_records(limit=0)


# -- locks -----------------------------------------------------------------------------------------


def test_a_lock_is_held_by_one_caller_at_a_time(store: Store, key: str) -> None:
    held = store.acquire_lock(key)
    assert isinstance(held, Lock) and held.name == key
    assert store.acquire_lock(key) is None
    assert held.release() is True
    assert held.release() is False  # a second release does nothing
    with store.acquire_lock(key) as again:  # type: ignore[union-attr]
        assert again.name == key
        assert store.acquire_lock(key) is None
    assert store.acquire_lock(key) is not None  # the block released it


def test_acquire_waits_for_the_holder_to_release(store: Store, key: str) -> None:
    held = store.acquire_lock(key)
    assert held is not None
    timer = threading.Timer(0.3, held.release)
    timer.start()
    began = time.monotonic()
    assert store.acquire_lock(key, wait_s=10) is not None
    assert 0.25 < time.monotonic() - began < 5
    timer.join()


def test_acquire_gives_up_after_its_wait(store: Store, key: str) -> None:
    assert store.acquire_lock(key) is not None
    began = time.monotonic()
    assert store.acquire_lock(key, wait_s=0.3) is None
    assert 0.25 < time.monotonic() - began < 2


def test_many_threads_take_turns_holding_a_lock(store: Store, key: str) -> None:
    inside: list[int] = []
    overlaps: list[int] = []
    done: list[int] = []

    def worker(n: int) -> None:
        lock = store.acquire_lock(key, wait_s=30)
        assert lock is not None
        with lock:
            inside.append(n)
            if len(inside) > 1:
                overlaps.append(n)
            time.sleep(0.01)
            inside.remove(n)
        done.append(n)

    threads = [threading.Thread(target=worker, args=(n,)) for n in range(10)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(40)
    assert sorted(done) == list(range(10))
    assert overlaps == []


def test_a_live_holder_keeps_its_lock_past_many_leases(store_url: str, key: str) -> None:
    owner = open_store(store_url, lease_s=0.3)
    other = open_store(store_url)
    try:
        held = owner.acquire_lock(key)
        assert held is not None
        time.sleep(1.2)  # four leases: the keeper renews the lock with the claims
        assert other.acquire_lock(key) is None
        assert held.release() is True
        assert other.acquire_lock(key) is not None
    finally:
        owner.close()
        other.close()


def _lock_and_stall(url: str, key: str, go: Event, out: Queue[str]) -> None:
    store = open_store(url, lease_s=2.0)
    lock = store.acquire_lock(key)
    out.put("held" if lock is not None else "refused")
    go.wait(30)
    assert lock is not None
    out.put(f"released: {lock.release()}")
    store.close()


def test_a_stalled_or_dead_holders_lock_comes_free_within_a_lease(
    store: Store, store_url: str, key: str
) -> None:
    go, out = CTX.Event(), CTX.Queue()
    holder = CTX.Process(target=_lock_and_stall, args=(store_url, key, go, out))
    holder.start()
    assert out.get(timeout=10) == "held"
    assert holder.pid is not None
    with frozen(holder.pid, store_url):  # frozen, or dead: its lease is not renewed either way
        began = time.monotonic()
        mine = store.acquire_lock(key, wait_s=10)
        assert mine is not None
        assert time.monotonic() - began < 2.0 + 3
    time.sleep(0.5)  # awake again, its keeper renews nothing that is not its own
    go.set()
    # The old holder learns that the lock was no longer its own, and frees nothing of ours.
    assert out.get(timeout=10) == "released: False"
    holder.join(10)
    assert store.acquire_lock(key) is None
    assert mine.release() is True


def test_lock_names_are_their_own_namespace(store: Store, key: str) -> None:
    store.put(key, "a record", 30)
    claim = store.claim_act(key, ttl_s=30, incident="inc-1")
    assert isinstance(claim, ActClaim)
    assert store.acquire_lock(key) is not None
    assert store.get(key) == "a record"
    assert store.act_state(key) == ActState("running", None, "inc-1")


@pytest.mark.parametrize(("name", "wait_s"), [("", 0), ("lock", -1), ("lock", float("inf"))])
def test_bad_lock_arguments_are_programming_errors(store: Store, name: str, wait_s: float) -> None:
    with pytest.raises(ValueError, match=r"name|wait_s"):
        store.acquire_lock(name, wait_s=wait_s)


# -- URL asks --------------------------------------------------------------------------------------


def _ask(key: str, ttl_s: float = 60.0) -> UrlAsk:
    now = time.time()
    return UrlAsk(
        id=new_ask_id(), binding=f"binding-{key}", principal="alice", tool="rotate_key",
        step="credentials", message="Enter the new key.",
        fields=(AskField("api_key", {"type": "string"}, True, True),), definition="def-1",
        created=now, expires=now + ttl_s,
    )  # fmt: skip


def test_an_ask_is_opened_once_per_binding_with_a_random_192_bit_id(store: Store, key: str) -> None:
    first = store.open_ask(_ask(key))
    again = store.open_ask(_ask(key))
    assert again == first and store.ask(first.id) == first
    assert len(first.id) == len("ask_") + 32  # 24 random bytes, URL-safe
    assert store.open_ask(_ask(key + "-other")).id != first.id


def test_an_ask_is_submitted_once_and_wakes_its_waiter(store: Store, key: str) -> None:
    ask = store.open_ask(_ask(key))
    assert store.wait_ask(ask.id, 0.0) == ask  # not submitted: as it is
    woken: list[UrlAsk | None] = []
    waiter = threading.Thread(target=lambda: woken.append(store.wait_ask(ask.id, 10.0)))
    waiter.start()
    time.sleep(0.2)
    started = time.monotonic()
    done = store.submit_ask(ask.id, {"api_key": {"$sealed": "ciphertext"}})
    waiter.join(10)
    assert done is not None and done.values == {"api_key": {"$sealed": "ciphertext"}}
    assert woken == [done] and time.monotonic() - started < 2
    assert store.submit_ask(ask.id, {"api_key": {"$sealed": "another"}}) is None
    assert store.ask(ask.id) == done


def test_an_ended_ask_is_gone_and_its_binding_free(store: Store, key: str) -> None:
    ask = store.open_ask(_ask(key))
    store.submit_ask(ask.id, {"api_key": {"$sealed": "x"}})
    store.end_ask(ask)
    assert store.ask(ask.id) is None and store.wait_ask(ask.id, 0.0) is None
    assert store.submit_ask(ask.id, {"api_key": {"$sealed": "y"}}) is None
    assert store.open_ask(_ask(key)).id != ask.id


def test_an_ask_expires_with_its_expiry(store: Store, key: str) -> None:
    ask = store.open_ask(_ask(key, ttl_s=1.0))
    time.sleep(1.3)
    assert store.ask(ask.id) is None
    assert store.open_ask(_ask(key)).id != ask.id
