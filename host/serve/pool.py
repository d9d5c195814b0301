"""The worker's request threads: up to ``threads`` requests held, only a few of them running.

A legacy client's question holds its request's thread while the user answers, so a worker keeps
a thousand threads for a thousand open questions. gunicorn's own pool lets every thread run at
once: sixteen connections meant sixteen requests sharing one GIL in no fixed order, each one's
code and data pushed out of the CPU's caches by the others', and a wide tail of latencies. This
pool runs at most :data:`RUNNING` requests at a time and queues the others, in order, so a
request runs mostly alone and one that finishes takes the next queued one on its own thread.

A request's turn is its own only while it runs. One that waits gives it away: at once, where the
wait says so (:func:`host.blocking.blocking`: a durable commit, a question's answer), and
otherwise once it has run for :data:`STALE_S`, when it is taken for waiting on something nobody
marked (a slow client, a hanging handler, a lock). So a few slow requests never stop the others
for more than :data:`STALE_S`, and the threads, not the turns, bound what a worker holds. A
request back from a wait counts again at once, even past :data:`RUNNING`: it never waits twice.
A thread waiting for its connection's next request (:meth:`RequestPool.between`) holds no turn
either, but one that has it queues for a turn like new work (that request has not started yet),
going past only work that waits for a thread: it brings its own.

NOTE: measured in ``bench/RESULTS.md`` (2026-12-02, late evening): plain calls' p99 a quarter
narrower served, throughput unchanged, exchanges unchanged; fewer turns, or durable commits not
giving theirs away, cost exchanges their shared fsyncs.
"""

from __future__ import annotations

import threading
import time
from collections import deque
from collections.abc import Callable
from concurrent.futures import Executor, Future
from typing import Any, ParamSpec, TypeVar

from host import blocking

__all__ = ["RUNNING", "STALE_S", "RequestPool"]

P = ParamSpec("P")
T = TypeVar("T")

#: Requests a worker runs at once.
RUNNING = 4
#: Seconds after which a running request is taken for waiting, and its turn given to the next.
STALE_S = 0.05

_Work = tuple[Future[Any], Callable[..., Any], tuple[Any, ...], dict[str, Any]]

#: The pool thread the calling thread is, if it is one (for :meth:`RequestPool.between`).
_current = threading.local()


class _Stretch:
    """One stretch of a request's running, from its start until it ends, waits or goes stale."""

    __slots__ = ("counted", "start")

    def __init__(self, start: float) -> None:
        self.start = start
        self.counted = True


class _Thread:
    """One of the pool's threads: the gate it sleeps on while idle, and its request's turn."""

    __slots__ = ("away", "gate", "pool", "stretch")

    def __init__(self, pool: RequestPool) -> None:
        self.pool = pool
        self.gate = threading.Lock()
        self.gate.acquire()
        self.stretch: _Stretch | None = None
        self.away = 0  # NOTE: waits inside waits give the turn away once

    def leave(self) -> None:
        """Its request is about to wait (:class:`host.blocking.Turn`)."""
        self.pool._leave(self)

    def back(self) -> None:
        """Its request waits no more (:class:`host.blocking.Turn`)."""
        self.pool._back(self)


class RequestPool(Executor):
    """gunicorn's thread pool for one worker: ``threads`` at most, ``running`` of them at once.

    Args:
        threads: Threads the pool may start (each holds one request, running or waiting).
        running: Requests that run at once.
        stale_s: Seconds after which a running request no longer counts as running.
    """

    def __init__(self, threads: int, running: int = RUNNING, stale_s: float = STALE_S) -> None:
        if threads < 1 or running < 1:
            raise ValueError("a request pool needs at least one thread and one turn")
        self._threads_max = threads
        self._running_max = running
        self._stale_s = stale_s
        self._lock = threading.Lock()
        self._woken = threading.Condition(self._lock)  # the watcher's
        # NOTE: queued work, and threads back for their connection's next request (in order).
        self._work: deque[_Work | _Thread] = deque()
        self._returning = 0  # the threads among _work
        # NOTE: threads back with the next request of a connection refused over its limits:
        # they go only when nothing else is queued.
        self._behind: deque[_Thread] = deque()
        self._idle: list[_Thread] = []  # NOTE: a stack: the thread that ran last runs next
        self._started: list[threading.Thread] = []
        self._stretches: deque[_Stretch] = deque()  # in the order they started
        self._counted = 0
        self._watching = False  # whether the watcher sleeps until a stretch goes stale
        self._watcher: threading.Thread | None = None
        self._shutdown = False

    def submit(self, fn: Callable[P, T], /, *args: P.args, **kwargs: P.kwargs) -> Future[T]:
        """Queue ``fn(*args, **kwargs)``; it runs as soon as a turn and a thread are free."""
        future: Future[T] = Future()
        with self._lock:
            if self._shutdown:
                raise RuntimeError("the request pool is shut down")
            self._work.append((future, fn, args, kwargs))
            go = self._dispatch(time.monotonic())
            if not go:
                self._watch()
        self._go(go)
        return future

    def shutdown(self, wait: bool = True, *, cancel_futures: bool = False) -> None:
        """Stop taking work; idle threads end, and so do busy ones once the queue is empty."""
        with self._lock:
            self._shutdown = True
            idle, self._idle = self._idle, []
            dropped = [*self._work, *self._behind] if cancel_futures else []
            if cancel_futures:
                self._work.clear()
                self._behind.clear()
                self._returning = 0
            self._woken.notify_all()
        for item in dropped:
            if isinstance(item, _Thread):
                item.gate.release()  # NOTE: it goes on with its request, as one running does
            else:
                item[0].cancel()
        for thread in idle:
            thread.gate.release()
        if wait:
            for started in list(self._started):
                if started is not threading.current_thread():
                    started.join()

    def between(self, wait: Callable[[], bool], *, behind: bool = False) -> bool:
        """Between two requests of one connection: ``wait()`` for the next without a turn.

        Called by the thread that served the last one; True once the next has come and the
        thread has a turn again (in order, behind the work queued meanwhile), so it serves it
        itself; False when ``wait()`` gives up. Off the pool's threads, ``wait()`` alone.
        ``behind``: the last request was refused over its caller's limits; the next one waits
        behind every other queued request (it goes once none is queued).
        """
        thread: _Thread | None = getattr(_current, "thread", None)
        if thread is None or thread.pool is not self:
            return wait()
        with self._lock:
            self._uncount(thread.stretch)
            thread.stretch = None
            go = self._dispatch(time.monotonic())
        self._go(go)
        if not wait():
            return False
        with self._lock:
            now = time.monotonic()
            if not self._work and not self._behind and self._room(now):
                self._count(thread, now)
                return True
            if behind:
                self._behind.append(thread)
            else:
                self._work.append(thread)
                self._returning += 1
            go = self._dispatch(now)
            if thread not in go:
                self._watch()  # NOTE: the turns may all be held by requests gone stale
        self._go(go)
        thread.gate.acquire()
        return True

    # -- turns (called with the lock held unless said otherwise) ----------------------------

    def _count(self, thread: _Thread, now: float) -> None:
        thread.stretch = stretch = _Stretch(now)
        self._stretches.append(stretch)
        self._counted += 1

    def _uncount(self, stretch: _Stretch | None) -> None:
        if stretch is not None and stretch.counted:
            stretch.counted = False
            self._counted -= 1

    def _room(self, now: float) -> bool:
        """Whether a turn is free, once the stretches gone stale by ``now`` stop counting."""
        stretches, since = self._stretches, now - self._stale_s
        while stretches and (not stretches[0].counted or stretches[0].start <= since):
            self._uncount(stretches.popleft())
        return self._counted < self._running_max

    def _dispatch(self, now: float) -> list[_Thread | threading.Thread]:
        """Who goes now: at most one idle thread to wake (or new one to start) for the queued
        work, and the threads back with their connection's next request that fit in the turns
        left (counted now).

        NOTE: a thread back for a turn needs no other thread, so it may go past work waiting for
        one: with every thread holding a connection, that work would wait for a thread, and the
        threads for a turn, for good. In order otherwise: a woken thread takes the queue's head.
        """
        go: list[_Thread | threading.Thread] = []
        if not (self._work or self._behind) or not self._room(now):
            return go
        if len(self._work) > self._returning:
            waker = self._waker()
            if waker is not None:
                go.append(waker)  # NOTE: it takes a turn of its own once it runs
        waking = len(go)
        while self._returning and self._counted + waking < self._running_max:
            back = next(item for item in self._work if isinstance(item, _Thread))
            self._work.remove(back)
            self._returning -= 1
            self._count(back, now)
            go.append(back)
        while self._behind and not self._work and self._counted + waking < self._running_max:
            back = self._behind.popleft()
            self._count(back, now)
            go.append(back)
        return go

    def _waker(self) -> _Thread | threading.Thread | None:
        """An idle thread to wake, or a new one to start, for queued work; None at the most."""
        if self._idle:
            return self._idle.pop()
        if len(self._started) < self._threads_max:
            thread = threading.Thread(
                target=self._serve, name=f"host-request_{len(self._started) + 1}", daemon=True
            )
            self._started.append(thread)
            return thread
        return None

    @staticmethod
    def _go(go: list[_Thread | threading.Thread]) -> None:
        """Wake the threads :meth:`_dispatch` chose, or start the new one (without the lock)."""
        for each in go:
            if isinstance(each, _Thread):
                each.gate.release()
            else:
                each.start()

    def _leave(self, thread: _Thread) -> None:
        with self._lock:
            thread.away += 1
            if thread.away > 1:
                return
            self._uncount(thread.stretch)
            thread.stretch = None
            go = self._dispatch(time.monotonic())
        self._go(go)

    def _back(self, thread: _Thread) -> None:
        with self._lock:
            thread.away -= 1
            if thread.away == 0:
                self._count(thread, time.monotonic())

    # -- threads -----------------------------------------------------------------------------

    def _serve(self) -> None:
        """A pool thread: take queued work while a turn is free, sleep on its gate otherwise."""
        thread = _Thread(self)
        blocking.hold(thread)
        _current.thread = thread
        while True:
            with self._lock:
                self._uncount(thread.stretch)
                thread.stretch, work = None, None
                now = time.monotonic()
                # NOTE: _room also drops the stretches that ended, so they never pile up.
                if self._room(now) and self._work:
                    work = self._work.popleft()
                    if isinstance(work, _Thread):
                        self._returning -= 1
                    self._count(work if isinstance(work, _Thread) else thread, now)
                elif self._behind and self._counted < self._running_max:
                    work = self._behind.popleft()
                    self._count(work, now)
                elif self._shutdown:
                    return
                else:
                    self._idle.append(thread)
            if isinstance(work, _Thread):
                work.gate.release()  # NOTE: its turn is counted; this thread looks again
            elif work is None:
                thread.gate.acquire()
            else:
                _run(work)

    def _watch(self) -> None:
        """Work is queued and no turn is free: have the watcher wake when one goes stale."""
        if self._watcher is None:
            watcher = threading.Thread(target=self._watch_loop, name="host-turns", daemon=True)
            self._watcher = watcher
            watcher.start()
        elif not self._watching:
            self._woken.notify()

    def _watch_loop(self) -> None:
        """Give the turn of each request that runs past :data:`STALE_S` to the queued work."""
        with self._lock:
            while not self._shutdown:
                now = time.monotonic()
                go = self._dispatch(now)
                if go:
                    self._lock.release()
                    try:
                        self._go(go)
                    finally:
                        self._lock.acquire()
                    continue
                # NOTE: with work queued and no turn free, the oldest counted stretch is the
                # first to go stale; otherwise a submit (or a shutdown) wakes the watcher.
                stale = (
                    (self._work or self._behind)
                    and self._stretches
                    and self._counted >= self._running_max
                )
                self._watching = bool(stale)
                due = self._stretches[0].start + self._stale_s - now if stale else None
                self._woken.wait(due)
                self._watching = False


def _run(work: _Work) -> None:
    future, fn, args, kwargs = work
    if not future.set_running_or_notify_cancel():
        return
    try:
        value = fn(*args, **kwargs)
    except BaseException as exc:  # NOTE: the future carries it to gunicorn, as its own pool's does
        future.set_exception(exc)
    else:
        future.set_result(value)
