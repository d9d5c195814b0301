"""Places in the store (the bound behind HOST_LIMIT_SESSIONS), on a real SQLite file and Redis.

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


def held(store: Store, group: str, members: list[str]) -> list[str]:
    """The ``members`` that are live members of ``group``."""
    return [m for m in members if store.holds_place(group, m)]


def test_a_group_at_its_limit_evicts_its_least_recently_renewed_member(
    store: Store, key: str
) -> None:
    for n in range(3):
        assert store.take_place(key, f"m{n}", most=3, ttl_s=30) == []
        time.sleep(0.01)  # distinct expiries: Redis scores in milliseconds
    assert store.take_place(key, "m3", most=3, ttl_s=30) == ["m0"]
    assert held(store, key, ["m0", "m1", "m2", "m3"]) == ["m1", "m2", "m3"]


def test_a_renewed_member_is_not_the_one_evicted(store: Store, key: str) -> None:
    for name in ("a", "b", "c"):
        assert store.take_place(key, name, most=3, ttl_s=30) == []
        time.sleep(0.01)
    assert store.renew_place(key, "a", ttl_s=30)
    time.sleep(0.01)
    assert store.take_place(key, "d", most=3, ttl_s=30) == ["b"]
    assert store.take_place(key, "e", most=3, ttl_s=30) == ["c"]
    assert held(store, key, ["a", "b", "c", "d", "e"]) == ["a", "d", "e"]


def test_an_evicted_given_or_expired_member_is_not_renewed_back(store: Store, key: str) -> None:
    assert store.take_place(key, "a", most=1, ttl_s=30) == []
    assert store.take_place(key, "b", most=1, ttl_s=30) == ["a"]
    assert not store.renew_place(key, "a", ttl_s=30) and not store.holds_place(key, "a")
    store.give_place(key, "b")
    assert not store.renew_place(key, "b", ttl_s=30) and not store.holds_place(key, "b")
    assert store.take_place(key, "c", most=1, ttl_s=0.3) == []
    time.sleep(0.4)
    assert not store.renew_place(key, "c", ttl_s=30) and not store.holds_place(key, "c")
    assert not store.renew_place(key + "/none", "x", ttl_s=30)


def test_renewing_slides_a_members_expiry(store: Store, key: str) -> None:
    assert store.take_place(key, "a", most=2, ttl_s=0.5) == []
    time.sleep(0.3)
    assert store.renew_place(key, "a", ttl_s=0.5)
    time.sleep(0.3)
    assert store.holds_place(key, "a")  # 0.6 s after it was taken for 0.5 s
    time.sleep(0.3)
    assert not store.holds_place(key, "a")


def test_a_member_taken_again_is_renewed_not_counted_twice(store: Store, key: str) -> None:
    assert store.take_place(key, "a", most=1, ttl_s=30) == []
    assert store.take_place(key, "a", most=1, ttl_s=30) == []
    assert store.take_place(key, "b", most=1, ttl_s=30) == ["a"]


def test_a_place_given_back_or_expired_frees_it(store: Store, key: str) -> None:
    assert store.take_place(key, "a", most=2, ttl_s=30) == []
    assert store.take_place(key, "b", most=2, ttl_s=0.3) == []
    store.give_place(key, "a")
    assert not store.holds_place(key, "a")
    assert store.take_place(key, "c", most=2, ttl_s=30) == []
    time.sleep(0.4)
    assert not store.holds_place(key, "b")
    assert store.take_place(key, "d", most=2, ttl_s=30) == []  # b expired: not evicted
    assert store.take_place(key, "e", most=2, ttl_s=30) == ["c"]


def test_groups_are_separate_and_no_limit_never_evicts(store: Store, key: str) -> None:
    assert store.take_place(key + "/1", "a", most=1, ttl_s=30) == []
    assert store.take_place(key + "/2", "a", most=1, ttl_s=30) == []
    assert not store.holds_place(key + "/2", "b")
    assert all(store.take_place(key, f"m{n}", most=None, ttl_s=30) == [] for n in range(50))
    assert len(held(store, key, [f"m{n}" for n in range(50)])) == 50
    with pytest.raises(ValueError, match="most must be at least 1"):
        store.take_place(key, "z", most=0, ttl_s=30)


def _take_many(url: str, group: str, start: int, out: Queue[int]) -> None:
    store = open_store(url)
    try:
        out.put(sum(len(store.take_place(group, f"p{start + n}", most=10, ttl_s=30))
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
    # every take past the first ten evicted exactly one member, and ten are left
    assert sum(out.get(timeout=5) for _ in procs) == 70
    members = [f"p{n * 100 + m}" for n in range(4) for m in range(20)]
    store = open_store(store_url)
    try:
        assert len(held(store, key, members)) == 10
    finally:
        store.close()
