"""Places in the store (the count behind HOST_LIMIT_SESSIONS), on a real SQLite file and Redis.

The ``store`` and ``store_url`` fixtures (tests/conftest.py) run each test on both backends.
"""

from __future__ import annotations

import multiprocessing
import time
from multiprocessing.queues import Queue

import pytest

from host.store import Store, open_store

pytestmark = pytest.mark.served

CTX = multiprocessing.get_context("fork")


def test_a_group_takes_members_up_to_its_limit(store: Store, key: str) -> None:
    assert [store.take_place(key, f"m{n}", most=3, ttl_s=30) for n in range(3)] == [None] * 3
    refused = store.take_place(key, "m3", most=3, ttl_s=30)
    assert refused is not None and 28 < refused <= 30
    assert store.holds_place(key, "m0") and not store.holds_place(key, "m3")


def test_a_member_taken_again_is_renewed_not_counted_twice(store: Store, key: str) -> None:
    assert store.take_place(key, "a", most=1, ttl_s=30) is None
    assert store.take_place(key, "a", most=1, ttl_s=30) is None
    assert store.take_place(key, "b", most=1, ttl_s=30) is not None


def test_a_place_given_back_or_expired_frees_it(store: Store, key: str) -> None:
    assert store.take_place(key, "a", most=2, ttl_s=30) is None
    assert store.take_place(key, "b", most=2, ttl_s=0.3) is None
    store.give_place(key, "a")
    assert not store.holds_place(key, "a")
    assert store.take_place(key, "c", most=2, ttl_s=30) is None
    assert store.take_place(key, "d", most=2, ttl_s=30) is not None
    time.sleep(0.4)
    assert not store.holds_place(key, "b")
    assert store.take_place(key, "d", most=2, ttl_s=30) is None


def test_groups_are_separate_and_no_limit_is_never_refused(store: Store, key: str) -> None:
    assert store.take_place(key + "/1", "a", most=1, ttl_s=30) is None
    assert store.take_place(key + "/2", "a", most=1, ttl_s=30) is None
    assert not store.holds_place(key + "/2", "b")
    assert all(store.take_place(key, f"m{n}", most=None, ttl_s=30) is None for n in range(50))


def _take_many(url: str, group: str, start: int, out: Queue[int]) -> None:
    store = open_store(url)
    try:
        out.put(sum(store.take_place(group, f"p{start + n}", most=10, ttl_s=30) is None
                    for n in range(20)))  # fmt: skip
    finally:
        store.close()


def test_processes_taking_at_once_never_exceed_the_limit(store_url: str, key: str) -> None:
    out: Queue[int] = CTX.Queue()
    procs = [CTX.Process(target=_take_many, args=(store_url, key, n * 100, out)) for n in range(4)]
    for proc in procs:
        proc.start()
    for proc in procs:
        proc.join(30)
    assert sum(out.get(timeout=5) for _ in procs) == 10
