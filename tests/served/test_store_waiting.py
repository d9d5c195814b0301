"""Waiting pops: many waiters cost next to no CPU and no connection each, and none sleeps through
a value, not even when Redis drops a notification or restarts.

CPU bounds here are generous (a tenth of what polling per waiter cost) so a busy machine does not
fail them; the honest figures are measured by bench/waiting.py.
"""

from __future__ import annotations

import multiprocessing
import threading
import time
from collections.abc import Callable
from multiprocessing.queues import Queue

import pytest
import redis

from host.store import Store, open_store
from host.store.redis import RedisBackend
from support.redis import RedisServer

CTX = multiprocessing.get_context("fork")


class Waiters:
    """``count`` threads, each popping its own key of ``store`` with ``timeout_s``."""

    def __init__(self, store: Store, prefix: str, count: int, timeout_s: float) -> None:
        self.keys = [f"{prefix}-{n}" for n in range(count)]
        self.got: dict[str, str | None] = {}
        self._store = store
        self._threads = [
            threading.Thread(target=self._wait, args=(key, timeout_s), daemon=True)
            for key in self.keys
        ]
        for thread in self._threads:
            thread.start()

    def _wait(self, key: str, timeout_s: float) -> None:
        self.got[key] = self._store.pop(key, timeout_s)

    def join(self, timeout_s: float) -> None:
        deadline = time.monotonic() + timeout_s
        for thread in self._threads:
            thread.join(max(0.0, deadline - time.monotonic()))
        assert not any(thread.is_alive() for thread in self._threads), "waiters still waiting"


def _cpu_per_second(seconds: float) -> float:
    """This process's CPU time (all threads) per second of wall time, over ``seconds``."""
    cpu, wall = time.process_time(), time.monotonic()
    time.sleep(seconds)
    return (time.process_time() - cpu) / (time.monotonic() - wall)


def test_500_waiting_pops_cost_next_to_no_cpu_and_all_get_their_values(
    store: Store, key: str
) -> None:
    waiters = Waiters(store, key, 500, timeout_s=60)
    time.sleep(1.5)  # let every waiter start, look once and settle down to wait
    assert not waiters.got, "a waiter returned before anything was pushed"
    cpu = _cpu_per_second(3.0)
    # NOTE: polling each waiter's queue every 5-20 ms cost several CPU-seconds per second here.
    assert cpu < 0.3, f"500 waiting pops used {cpu:.2f} s of CPU per second"
    for name in reversed(waiters.keys):
        store.push(name, f"value of {name}", 30)
    waiters.join(30)
    assert waiters.got == {name: f"value of {name}" for name in waiters.keys}


def _clients(url: str) -> int:
    raw = redis.Redis.from_url(url)
    try:
        return len(raw.client_list())
    finally:
        raw.close()


def test_redis_waiting_pops_hold_no_connection_each(
    redis_server: Callable[..., RedisServer], key: str
) -> None:
    server = redis_server()
    store = open_store(server.url)
    try:
        before = _clients(server.url)
        waiters = Waiters(store, key, 200, timeout_s=60)
        time.sleep(1.5)
        during = _clients(server.url)
        # The pool's bounded connections and one subscription, however many wait.
        assert during - before <= 51, f"{during - before} connections for 200 waiters"
        for name in waiters.keys:
            store.push(name, "x", 30)
        waiters.join(30)
        assert set(waiters.got.values()) == {"x"}
    finally:
        store.close()


def test_redis_value_whose_notification_was_lost_arrives_at_the_recheck(
    redis_url: str, key: str
) -> None:
    store = Store(RedisBackend(redis_url, recheck_s=0.5))
    raw = redis.Redis.from_url(redis_url)
    try:
        waiters = Waiters(store, key, 1, timeout_s=20)
        time.sleep(0.3)
        raw.rpush(f"host:q:{key}-0", "unannounced")  # a push whose PUBLISH never arrived
        began = time.monotonic()
        waiters.join(10)
        assert waiters.got == {f"{key}-0": "unannounced"}
        assert time.monotonic() - began < 5
    finally:
        raw.close()
        store.close()


def test_redis_restart_while_waiting_loses_no_value(
    redis_server: Callable[..., RedisServer], key: str
) -> None:
    server = redis_server("--appendonly", "yes")
    store = Store(RedisBackend(server.url, recheck_s=0.5))
    pusher = None
    try:
        waiters = Waiters(store, key, 3, timeout_s=30)
        time.sleep(0.3)
        server.restart()
        pusher = open_store(server.url)
        for name in waiters.keys:
            pusher.push(name, "after the restart", 30)
        waiters.join(20)
        assert set(waiters.got.values()) == {"after the restart"}
    finally:
        store.close()
        if pusher is not None:
            pusher.close()


def _pop_after_fork(store: Store, key: str, out: Queue[str | None]) -> None:
    out.put(store.pop(key, 60))


def test_a_store_waited_on_before_fork_wakes_waiters_in_the_child(store: Store, key: str) -> None:
    assert store.pop(f"{key}-warm", 0.1) is None  # the parent's watcher has run
    out: Queue[str | None] = CTX.Queue()
    proc = CTX.Process(target=_pop_after_fork, args=(store, key, out))
    proc.start()
    time.sleep(0.5)
    store.push(key, "to the child", 30)
    # Woken by the child's own watcher, not found by a last look when its minute is up.
    assert out.get(timeout=10) == "to the child"
    proc.join(10)
    assert proc.exitcode == 0


def test_many_waiters_on_one_key_each_take_one_value(store: Store, key: str) -> None:
    got: list[str | None] = []
    threads = [threading.Thread(target=lambda: got.append(store.pop(key, 10))) for _ in range(10)]
    for thread in threads:
        thread.start()
    time.sleep(0.3)
    for n in range(10):
        store.push(key, f"v{n}", 30)
    for thread in threads:
        thread.join(15)
    assert sorted(value or "" for value in got) == sorted(f"v{n}" for n in range(10))


@pytest.mark.parametrize("timeout_s", [0, -1])
def test_pop_without_waiting_starts_no_watcher(store: Store, key: str, timeout_s: float) -> None:
    before = {thread.name for thread in threading.enumerate()}
    assert store.pop(key, timeout_s) is None
    started = {thread.name for thread in threading.enumerate()} - before
    assert "host-store-waiters" not in started
