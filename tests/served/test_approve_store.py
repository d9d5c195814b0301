"""Approval requests in the store, on SQLite and Redis: one per binding, decided, spent once."""

from __future__ import annotations

import threading
import time
from concurrent.futures import ThreadPoolExecutor

import pytest

from host.errors import Conflict, Forbidden, NotFound, StoreError
from host.store import Store, open_store
from host.store.requests import ApprovalRequest, new_request_id


def _request(
    binding: str, *, needed: int = 1, expires_s: float = 60.0, caller: str = "alice"
) -> ApprovalRequest:
    now = time.time()
    return ApprovalRequest(
        id=new_request_id(),
        binding=binding,
        caller=caller,
        tool="restart_service",
        step="change",
        message="alice asks to restart web",
        approvers=("ops:approve",),
        needed=needed,
        arguments={"service": "web"},
        answers={},
        definition="d1",
        created=now,
        expires=now + expires_s,
    )


def test_identical_calls_find_one_request(store: Store, key: str) -> None:
    first = store.open_request(_request(key))
    again = store.open_request(_request(key))
    assert again.id == first.id
    assert store.request(first.id) == first
    assert first.status(time.time()) == "pending"


def test_concurrent_opens_make_one_request(store_url: str, key: str) -> None:
    stores = [open_store(store_url) for _ in range(2)]
    try:
        with ThreadPoolExecutor(16) as pool:
            opened = list(
                pool.map(lambda i: stores[i % 2].open_request(_request(key)).id, range(32))
            )
        assert len(set(opened)) == 1
    finally:
        for opened_store in stores:
            opened_store.close()


def test_nobody_approves_their_own_request(store: Store, key: str) -> None:
    request = store.open_request(_request(key))
    with pytest.raises(Forbidden):
        store.decide_request(request.id, "alice", "approve", "")
    assert store.request(request.id).status(time.time()) == "pending"  # type: ignore[union-attr]


def test_count_two_needs_two_distinct_approvers(store: Store, key: str) -> None:
    request = store.open_request(_request(key, needed=2))
    once = store.decide_request(request.id, "bob", "approve", "ok")
    assert once.status(time.time()) == "pending" and once.approved_by == ("bob",)
    # The same decision again (a retry whose answer was lost) is acknowledged, not added.
    assert store.decide_request(request.id, "bob", "approve", "again") == once
    with pytest.raises(Conflict):
        store.decide_request(request.id, "bob", "reject", "changed my mind")
    twice = store.decide_request(request.id, "carol", "approve", "fine")
    assert twice.status(time.time()) == "approved"
    assert twice.approved_by == ("bob", "carol") and twice.reason == "fine"
    with pytest.raises(Conflict):
        store.decide_request(request.id, "dave", "reject", "late")


def test_one_rejection_ends_the_request(store: Store, key: str) -> None:
    request = store.open_request(_request(key, needed=2))
    store.decide_request(request.id, "bob", "approve", "")
    rejected = store.decide_request(request.id, "carol", "reject", "not today")
    assert rejected.status(time.time()) == "rejected" and rejected.reason == "not today"
    assert store.spend_request(request.id, "call-1") is False


def test_an_expired_request_cannot_be_decided(store: Store, key: str) -> None:
    request = store.open_request(_request(key, expires_s=0.3))
    time.sleep(0.4)
    assert store.request(request.id).status(time.time()) == "expired"  # type: ignore[union-attr]
    with pytest.raises(Conflict):
        store.decide_request(request.id, "bob", "approve", "")


def test_unknown_request(store: Store, key: str) -> None:
    with pytest.raises(NotFound):
        store.decide_request("apr_" + key, "bob", "approve", "")


def test_an_approval_is_spent_by_exactly_one_call(store_url: str, key: str) -> None:
    stores = [open_store(store_url) for _ in range(2)]
    try:
        request = stores[0].open_request(_request(key))
        stores[1].decide_request(request.id, "bob", "approve", "")
        with ThreadPoolExecutor(16) as pool:
            spent = list(
                pool.map(lambda i: stores[i % 2].spend_request(request.id, f"call-{i}"), range(32))
            )
        assert spent.count(True) == 1
        winner = f"call-{spent.index(True)}"
        assert stores[0].spend_request(request.id, winner) is True  # the same call, retried
        renewed = stores[0].open_request(_request(key))
        assert renewed.id != request.id  # the next identical call makes a new request
    finally:
        for opened_store in stores:
            opened_store.close()


def test_a_told_ending_frees_the_binding(store: Store, key: str) -> None:
    request = store.open_request(_request(key))
    store.decide_request(request.id, "bob", "reject", "no")
    assert store.open_request(_request(key)).id == request.id  # not told yet
    store.end_request(request.id)
    assert store.open_request(_request(key)).id != request.id


def test_voiding_frees_the_binding_and_reads_voided(store: Store, key: str) -> None:
    request = store.open_request(_request(key))
    voided = store.end_request(request.id, void=True)
    assert voided is not None and voided.status(time.time()) == "voided"
    with pytest.raises(Conflict):
        store.decide_request(request.id, "bob", "approve", "")


def test_a_decision_wakes_the_waiting_call(store_url: str, key: str) -> None:
    waiter, decider = open_store(store_url), open_store(store_url)
    try:
        request = waiter.open_request(_request(key))
        timer = threading.Timer(0.3, decider.decide_request, (request.id, "bob", "approve", ""))
        started = time.monotonic()
        timer.start()
        found = waiter.wait_request(request.id, 10.0)
        assert found is not None and found.status(time.time()) == "approved"
        assert time.monotonic() - started < 3.0
        timer.join()
        assert waiter.wait_request(request.id, 0.0) is not None
        pending = waiter.open_request(_request(key + "-b"))
        started = time.monotonic()
        assert waiter.wait_request(pending.id, 0.3).status(time.time()) == "pending"  # type: ignore[union-attr]
        assert time.monotonic() - started >= 0.3
    finally:
        waiter.close()
        decider.close()


def test_listed_newest_first(store: Store, key: str) -> None:
    first = store.open_request(_request(key + "-1"))
    second = store.open_request(_request(key + "-2"))
    ids = [r.id for r in store.requests() if r.id in (first.id, second.id)]
    assert ids == [second.id, first.id]


def test_a_retried_decision_is_acknowledged_once_recorded(store: Store, key: str) -> None:
    request = store.open_request(_request(key))
    approved = store.decide_request(request.id, "bob", "approve", "ok")
    assert approved.status(time.time()) == "approved"
    # The approver never heard the first answer (a 503, a timeout) and sends it again.
    again = store.decide_request(request.id, "bob", "approve", "ok")
    assert again.decisions == approved.decisions
    with pytest.raises(Conflict):
        store.decide_request(request.id, "carol", "approve", "late")


def test_a_decision_stands_when_its_wake_up_is_refused(
    store_url: str, key: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    waiter, decider = open_store(store_url), open_store(store_url)
    try:
        request = waiter.open_request(_request(key))

        def refused(*_: object) -> None:
            raise StoreError("the store refused the wake-up")

        monkeypatch.setattr(decider._queues, "push", refused)
        timer = threading.Timer(0.2, decider.decide_request, (request.id, "bob", "approve", ""))
        started = time.monotonic()
        timer.start()
        found = waiter.wait_request(request.id, 10.0)
        timer.join()
        # Never woken, the waiter still reads the decision when it looks again (every 0.5 s).
        assert found is not None and found.status(time.time()) == "approved"
        assert time.monotonic() - started < 2.0
    finally:
        waiter.close()
        decider.close()


def test_the_pending_limit_holds_under_concurrent_opens(store_url: str, key: str) -> None:
    stores = [open_store(store_url) for _ in range(2)]
    caller = f"caller-{key}"
    try:
        with ThreadPoolExecutor(16) as pool:
            opened = list(
                pool.map(
                    lambda i: stores[i % 2].open_request(
                        _request(f"{key}-{i}", caller=caller), most=20
                    ),
                    range(50),
                )
            )
        kept = [r for r in opened if r is not None]
        assert len(kept) == 20
        mine = [r for r in stores[0].requests() if r.caller == caller]
        assert len(mine) == 20
        # An identical call finds its request even at the limit; a decided one frees a place.
        assert stores[0].open_request(_request(f"{key}-x", caller=caller), most=20) is None
        same = stores[1].open_request(_request(kept[0].binding, caller=caller), most=20)
        assert same is not None and same.id == kept[0].id
        stores[0].decide_request(kept[0].id, "bob", "reject", "no")
        assert stores[1].open_request(_request(f"{key}-y", caller=caller), most=20) is not None
        assert stores[1].open_request(_request(f"{key}-z", caller=caller), most=20) is None
    finally:
        for opened_store in stores:
            opened_store.close()
