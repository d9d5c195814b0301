"""Handlers under a time limit: run on pooled threads, waited for at most their timeout.

A handler is the user's code: it may hang on a dead database or a slow API. The request must not
hang with it, so a timed handler runs on a thread of a per-process pool and the caller waits at
most its timeout. A handler that outlives it keeps running (Python cannot stop a thread safely):
a read's late value is dropped (reads change nothing), and an act's result is still recorded by
whoever started it (see :mod:`host.protocol.core`), so a retry can return it.

NOTE: a handler that never returns keeps its pool thread for good; the pool is large so that a
few such handlers do not starve the others, and each one is logged when its caller gives up.
The pool is the host's own rather than :mod:`concurrent.futures`': every read and act crosses
it, and a one-shot lock to wait on costs half of a ``Future``'s condition and semaphore.
"""

from __future__ import annotations

import _thread
import atexit
import os
import threading
from collections.abc import Callable
from queue import SimpleQueue
from typing import Any, Generic, TypeVar, cast

from host.errors import HandlerTimeout
from host.limits import CALLER, Slots, limit_error

__all__ = ["DEFAULT_ACT_S", "DEFAULT_READ_S", "RUNNER", "HandlerTimeout", "Handoff", "Runner"]

T = TypeVar("T")

#: A read's limit when neither its step nor the server's ``timeouts`` set one.
DEFAULT_READ_S = 10.0
#: An act's limit when neither its step nor the server's ``timeouts`` set one.
DEFAULT_ACT_S = 60.0


class Handoff(Generic[T]):
    """One call handed to a pool thread: it runs once, unless it is dropped before it starts.

    Args:
        call: What to run.
        then: Run once ``call`` has returned or raised, or it was dropped unstarted, before its
            caller can see either (a caller's share of the pool is given back so).
    """

    __slots__ = ("_call", "_done", "_error", "_then", "_ticket", "_value")

    def __init__(self, call: Callable[[], T], then: Callable[[], None] | None = None) -> None:
        self._call = call
        self._then = then
        # NOTE: one ticket, taken by whichever of run and cancel comes first: list.pop is one
        # step under the GIL, so the two cannot both take it.
        self._ticket = [True]
        self._done = _thread.allocate_lock()
        self._done.acquire()
        self._value: T | None = None
        self._error: BaseException | None = None

    def run(self, ended: Callable[[Handoff[Any]], None] | None = None) -> None:
        """Run the call on this (pool) thread, unless it was dropped; then ``ended(self)``.

        NOTE: ``ended`` (the pool's own bookkeeping) runs before the caller is woken: done
        after, it would hold the GIL the woken caller wants, and cost a switch each way.
        """
        try:
            self._ticket.pop()
        except IndexError:
            if ended is not None:
                ended(self)
            return
        try:
            self._value = self._call()
        except BaseException as exc:  # handed to the caller, as a Future does
            self._error = exc
        finally:
            try:
                if self._then is not None:
                    self._then()
                if ended is not None:
                    ended(self)
            finally:
                self._done.release()

    def cancel(self) -> bool:
        """Drop the call if it has not started; whether it was dropped (it never runs then)."""
        try:
            self._ticket.pop()
        except IndexError:
            return False
        if self._then is not None:
            self._then()
        return True

    def wait(self, timeout: float | None = None) -> bool:
        """Wait at most ``timeout`` seconds for the call to end; whether it has."""
        done = self._done
        if not done.acquire(True, -1 if timeout is None else timeout):
            return False
        # NOTE: given back at once, so a second wait (or one on another thread) returns too.
        done.release()
        return True

    def result(self, timeout: float | None = None) -> T:
        """The call's value, once it comes, waiting at most ``timeout`` seconds.

        Raises:
            TimeoutError: it has not come within ``timeout``.
            BaseException: whatever the call raised.
        """
        # NOTE: :meth:`wait` written out: every read and act waits here, a call less each.
        done = self._done
        if not done.acquire(True, -1 if timeout is None else timeout):
            raise TimeoutError
        done.release()
        if self._error is not None:
            raise self._error
        # NOTE: set by run whenever no error was (a call may return None itself).
        return cast(T, self._value)


class Runner:
    """A pool of threads for handlers, made on first use in each process (gunicorn forks).

    Args:
        threads: The most handlers running at once in one process.
    """

    def __init__(self, threads: int = 256) -> None:
        self._threads = threads
        self._callers: Slots | None = None
        self._lock = threading.Lock()
        self._pid = os.getpid()
        self._queue: SimpleQueue[Handoff[Any]] = SimpleQueue()
        # NOTE: idle threads less calls waiting for one; a thread is started when it is
        # negative, until there are ``threads``.
        self._spare = 0
        self._started = 0
        self._running: set[Handoff[Any]] = set()
        # NOTE: a forked child (a gunicorn worker) starts its own pool at the fork, rather than
        # each handoff asking whose process it is in (a system call a handoff).
        os.register_at_fork(after_in_child=self._reset)
        atexit.register(self._drain)

    def limit_callers(self, most: int | None) -> None:
        """Let one limited principal (:data:`host.limits.CALLER`) hold at most ``most`` threads."""
        self._callers = Slots(most) if most is not None else None

    def submit(self, call: Callable[[], T]) -> Handoff[T]:
        """Start ``call`` on a pool thread, within its caller's share of the pool.

        Raises:
            ProtocolError: HTTP 429: the request's principal holds its share of threads already
                (handlers of its that outran their callers still hold theirs).
        """
        callers = self._callers
        caller = CALLER.get() if callers is not None else None
        if callers is None or caller is None:
            handoff: Handoff[T] = Handoff(call)
        elif callers.take(caller):
            # NOTE: given back when the handler returns (or is dropped unstarted), not when its
            # caller is answered: a hanging handler goes on holding its share.
            handoff = Handoff(call, lambda: callers.give(caller))
        else:
            raise limit_error("handler_threads", callers.most, "HOST_LIMIT_HANDLER_THREADS", caller)
        # NOTE: the pool's bookkeeping written out here, not in a method of its own: every read
        # and act passes this way.
        with self._lock:
            self._spare -= 1
            start = self._spare < 0 and self._started < self._threads
            if start:
                self._spare += 1
                self._started += 1
            number = self._started - 1
        queue = self._queue
        queue.put(handoff)
        if start:
            name = f"host-handler_{number}"
            threading.Thread(target=self._work, args=(queue,), name=name, daemon=True).start()
        return handoff

    def call(self, call: Callable[[], T], limit_s: float) -> T:
        """``call()``'s value, if it comes within ``limit_s`` seconds.

        Raises:
            HandlerTimeout: it did not (it goes on running).
            Exception: whatever ``call`` raised.
        """
        handoff = self.submit(call)
        try:
            return handoff.result(limit_s)
        except TimeoutError:
            # NOTE: one still queued for a thread is dropped: it would start with nobody waiting.
            handoff.cancel()
            raise HandlerTimeout(limit_s) from None

    def _reset(self) -> None:
        """A pool of no threads yet, for this (forked) process: run in the child at the fork.

        NOTE: a pool inherited over fork has no threads in the child, and its queue and counts
        are the parent's; its lock too, which another thread of the parent may have held.
        """
        self._lock = threading.Lock()
        self._pid, self._queue, self._spare, self._started = os.getpid(), SimpleQueue(), 0, 0
        self._running = set()

    def _work(self, queue: SimpleQueue[Handoff[Any]]) -> None:
        """A pool thread: run what comes, for the life of the process."""
        running, ended = self._running, self._ended
        while True:
            handoff = queue.get()
            running.add(handoff)
            handoff.run(ended)

    def _ended(self, handoff: Handoff[Any]) -> None:
        """A pool thread is free again."""
        self._running.discard(handoff)
        with self._lock:
            self._spare += 1

    def _drain(self) -> None:
        """At exit, let the handlers still running finish (their acts record what they did).

        NOTE: the pool's threads are daemons, so an idle one never holds the exit up; as with
        ``concurrent.futures``, a handler that hangs does, until the process is killed.
        """
        if self._pid != os.getpid():
            return  # NOTE: a forked child's copy names its parent's calls, not its own.
        for handoff in list(self._running):
            handoff.wait()


#: The process's handler pool.
RUNNER = Runner()
