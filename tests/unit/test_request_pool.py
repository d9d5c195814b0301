"""The worker's request threads: few running at once, every wait giving its turn away."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator

import pytest

from host.blocking import blocking
from host.serve.pool import RequestPool

# NOTE: long enough that no test's request goes stale unless the test means it to.
NEVER_STALE = 60.0
WAIT = 10.0


class Gauge:
    """How many calls run at once, and the most that ever did."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.now = 0
        self.most = 0

    def hold(self, seconds: float) -> Callable[[], None]:
        def run() -> None:
            with self._lock:
                self.now += 1
                self.most = max(self.most, self.now)
            time.sleep(seconds)  # NOTE: unmarked: it keeps its turn
            with self._lock:
                self.now -= 1

        return run


@pytest.fixture
def pools() -> Iterator[Callable[..., RequestPool]]:
    made: list[RequestPool] = []

    def make(threads: int = 16, running: int = 2, stale_s: float = NEVER_STALE) -> RequestPool:
        pool = RequestPool(threads, running, stale_s)
        made.append(pool)
        return pool

    yield make
    for pool in made:
        pool.shutdown(wait=False, cancel_futures=True)


def test_results_and_errors_come_back_on_the_futures(pools: Callable[..., RequestPool]) -> None:
    pool = pools()

    def fail() -> None:
        raise KeyError("gone")

    assert pool.submit(lambda a, b=0: a + b, 2, b=3).result(WAIT) == 5
    with pytest.raises(KeyError, match="gone"):
        pool.submit(fail).result(WAIT)


def test_no_more_than_its_turns_run_at_once(pools: Callable[..., RequestPool]) -> None:
    pool, gauge = pools(threads=16, running=2), Gauge()

    futures = [pool.submit(gauge.hold(0.02)) for _ in range(12)]

    for future in futures:
        future.result(WAIT)
    assert gauge.most == 2


def test_a_marked_wait_gives_its_turn_to_the_next_request(
    pools: Callable[..., RequestPool],
) -> None:
    pool, answered = pools(running=1), threading.Event()

    def question() -> bool:
        with blocking():
            return answered.wait(WAIT)

    waiting = pool.submit(question)
    pool.submit(answered.set).result(WAIT)  # NOTE: would wait behind the question otherwise

    assert waiting.result(WAIT) is True


def test_an_unmarked_wait_gives_its_turn_away_once_stale(
    pools: Callable[..., RequestPool],
) -> None:
    pool, answered = pools(running=1, stale_s=0.05), threading.Event()

    # NOTE: timed from before the first submit: its turn, and so the stale window, can start
    # before submit returns (its thread may run first), and then less than stale_s passes after.
    began = time.monotonic()
    slow_client = pool.submit(lambda: answered.wait(WAIT))  # NOTE: says nothing
    pool.submit(answered.set).result(WAIT)

    assert slow_client.result(WAIT) is True
    assert time.monotonic() - began >= 0.05  # it did wait its turn first


def test_a_request_back_from_a_wait_counts_again(pools: Callable[..., RequestPool]) -> None:
    pool, gauge = pools(running=1), Gauge()
    answered, back = threading.Event(), threading.Event()

    def question() -> None:
        with blocking():
            answered.wait(WAIT)
        back.set()
        gauge.hold(0.2)()  # running again, past the pool's one turn

    asked = pool.submit(question)
    pool.submit(answered.set).result(WAIT)
    assert back.wait(WAIT)
    later = pool.submit(gauge.hold(0.0))

    later.result(WAIT)
    assert asked.done()  # NOTE: the later request waited for the turn the question took back
    assert gauge.most == 1


def test_a_thread_between_requests_gives_its_turn_away(pools: Callable[..., RequestPool]) -> None:
    pool, next_came = pools(running=1), threading.Event()

    lingering = pool.submit(pool.between, lambda: next_came.wait(WAIT))
    pool.submit(next_came.set).result(WAIT)  # NOTE: would wait behind the linger otherwise

    assert lingering.result(WAIT) is True


def test_a_thread_back_with_its_next_request_waits_for_a_turn_in_order(
    pools: Callable[..., RequestPool],
) -> None:
    pool, order = pools(running=1), []
    next_came, started, release = threading.Event(), threading.Event(), threading.Event()

    def connection() -> None:
        order.append("first request")
        assert pool.between(lambda: next_came.wait(WAIT))
        order.append("its next request")

    def other(name: str) -> Callable[[], None]:
        def run() -> None:
            order.append(name)
            started.set()
            release.wait(WAIT)  # NOTE: unmarked: it keeps the only turn

        return run

    served = pool.submit(connection)
    busy = pool.submit(other("another request"))
    assert started.wait(WAIT)
    queued = pool.submit(lambda: order.append("one queued meanwhile"))
    next_came.set()
    time.sleep(0.1)
    assert order == ["first request", "another request"]  # no turn: it waits, as queued work
    release.set()
    for future in (busy, queued, served):
        future.result(WAIT)

    assert order == [
        "first request", "another request", "one queued meanwhile", "its next request"
    ]  # fmt: skip


def test_a_refused_connections_next_request_waits_behind_everyone_elses(
    pools: Callable[..., RequestPool],
) -> None:
    """A flooding principal's refused connection, back at once, goes after work queued later."""
    pool, order = pools(running=1), []
    next_came, started, release = threading.Event(), threading.Event(), threading.Event()

    def flooder() -> None:
        order.append("refused")
        assert pool.between(lambda: next_came.wait(WAIT), behind=True)
        order.append("refused again")

    def holding() -> None:
        order.append("another request")
        started.set()
        release.wait(WAIT)  # NOTE: unmarked: it keeps the only turn

    served = pool.submit(flooder)
    busy = pool.submit(holding)
    assert started.wait(WAIT)
    next_came.set()
    time.sleep(0.1)  # the refused connection's next request is queued first
    later = [pool.submit(lambda n=n: order.append(f"queued later {n}")) for n in range(3)]
    release.set()
    for future in (busy, *later, served):
        future.result(WAIT)

    assert order == [
        "refused", "another request", "queued later 0", "queued later 1", "queued later 2",
        "refused again",
    ]  # fmt: skip


def test_a_thread_whose_connection_stays_quiet_hands_it_back(
    pools: Callable[..., RequestPool],
) -> None:
    pool = pools(running=1)

    assert pool.submit(pool.between, lambda: False).result(WAIT) is False
    assert pool.submit(lambda: "served").result(WAIT) == "served"


def test_threads_back_for_a_turn_are_not_stuck_behind_work_that_waits_for_a_thread(
    pools: Callable[..., RequestPool],
) -> None:
    """Every thread holds a connection between requests; new work waits for a thread at the head
    of the queue. The threads back with their next requests need no thread: they get turns."""
    pool = pools(threads=2, running=4)
    came = [threading.Event(), threading.Event()]
    waiting = threading.Semaphore(0)

    def connection(mine: threading.Event) -> str:
        def wait() -> bool:
            waiting.release()
            return mine.wait(WAIT)

        assert pool.between(wait)
        return "its next request"

    served = [pool.submit(connection, event) for event in came]
    for _ in came:
        assert waiting.acquire(timeout=WAIT)
    new = pool.submit(lambda: "a new connection")  # NOTE: no thread for it: both are held
    for event in came:
        event.set()

    assert [f.result(WAIT) for f in served] == ["its next request"] * 2
    assert new.result(WAIT) == "a new connection"


def test_between_off_the_pool_threads_only_waits() -> None:
    assert RequestPool(1).between(lambda: True) is True
    assert RequestPool(1).between(lambda: False) is False


def test_threads_bound_what_the_pool_holds(pools: Callable[..., RequestPool]) -> None:
    pool, release = pools(threads=3, running=3), threading.Event()
    started = threading.Semaphore(0)

    def hold() -> None:
        started.release()
        with blocking():
            release.wait(WAIT)

    held = [pool.submit(hold) for _ in range(5)]
    for _ in range(3):
        assert started.acquire(timeout=WAIT)

    assert not started.acquire(timeout=0.2)  # two stay queued: no fourth thread
    assert sum(f.running() for f in held) == 3
    release.set()
    for future in held:
        future.result(WAIT)


def test_the_thread_that_ran_last_runs_the_next_request(
    pools: Callable[..., RequestPool],
) -> None:
    pool = pools(threads=8, running=8)
    first = pool.submit(threading.get_ident).result(WAIT)
    time.sleep(0.05)  # NOTE: back on its gate

    assert [pool.submit(threading.get_ident).result(WAIT) for _ in range(5)] == [first] * 5


def test_a_shut_pool_takes_no_work_and_its_idle_threads_end(
    pools: Callable[..., RequestPool],
) -> None:
    pool = pools(threads=4, running=4)

    def thread() -> threading.Thread:
        time.sleep(0.01)
        return threading.current_thread()

    threads = {f.result(WAIT) for f in [pool.submit(thread) for _ in range(4)]}
    pool.shutdown(wait=True)

    with pytest.raises(RuntimeError, match="shut down"):
        pool.submit(time.sleep, 0)
    assert threads and not [t for t in threads if t.is_alive()]
    assert all(t.name.startswith("host-request_") for t in threads)


def test_blocking_off_the_pool_threads_does_nothing() -> None:
    with blocking():
        pass  # no pool, no turn: nothing to give away


def test_a_pool_needs_a_thread_and_a_turn() -> None:
    with pytest.raises(ValueError, match="at least one thread and one turn"):
        RequestPool(0)
