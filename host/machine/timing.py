"""Handlers under a time limit: run on pooled threads, waited for at most their timeout.

A handler is the user's code: it may hang on a dead database or a slow API. The request must not
hang with it, so a timed handler runs on a thread of a per-process pool and the caller waits at
most its timeout. A handler that outlives it keeps running (Python cannot stop a thread safely):
a read's late value is dropped (reads change nothing), and an act's result is still recorded by
whoever started it (see :mod:`host.protocol.core`), so a retry can return it.

NOTE: a handler that never returns keeps its pool thread for good; the pool is large so that a
few such handlers do not starve the others, and each one is logged when its caller gives up.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from concurrent.futures import TimeoutError as FutureTimeout
from typing import TypeVar

from host.errors import HandlerTimeout
from host.limits import CALLER, Slots, limit_error

__all__ = ["DEFAULT_ACT_S", "DEFAULT_READ_S", "RUNNER", "HandlerTimeout", "Runner"]

T = TypeVar("T")

#: A read's limit when neither its step nor the server's ``timeouts`` set one.
DEFAULT_READ_S = 10.0
#: An act's limit when neither its step nor the server's ``timeouts`` set one.
DEFAULT_ACT_S = 60.0


class Runner:
    """A pool of threads for handlers, made on first use in each process (gunicorn forks).

    Args:
        threads: The most handlers running at once in one process.
    """

    def __init__(self, threads: int = 256) -> None:
        self._threads = threads
        self._lock = threading.Lock()
        self._pool: ThreadPoolExecutor | None = None
        self._pid = -1
        self._callers: Slots | None = None

    def limit_callers(self, most: int | None) -> None:
        """Let one limited principal (:data:`host.limits.CALLER`) hold at most ``most`` threads."""
        self._callers = Slots(most) if most is not None else None

    def submit(self, call: Callable[[], T]) -> Future[T]:
        """Start ``call`` on a pool thread, within its caller's share of the pool.

        Raises:
            ProtocolError: HTTP 429: the request's principal holds its share of threads already
                (handlers of its that outran their callers still hold theirs).
        """
        callers, caller = self._callers, CALLER.get()
        if callers is None or caller is None:
            return self._executor().submit(call)
        if not callers.take(caller):
            raise limit_error("handler_threads", callers.most, "HOST_LIMIT_HANDLER_THREADS", caller)
        future = self._executor().submit(call)
        # NOTE: given back when the handler returns (or is dropped unstarted), not when its
        # caller is answered: a hanging handler goes on holding its share.
        future.add_done_callback(lambda _: callers.give(caller))
        return future

    def call(self, call: Callable[[], T], limit_s: float) -> T:
        """``call()``'s value, if it comes within ``limit_s`` seconds.

        Raises:
            HandlerTimeout: it did not (it goes on running).
            Exception: whatever ``call`` raised.
        """
        future = self.submit(call)
        try:
            return future.result(timeout=limit_s)
        except FutureTimeout:
            # NOTE: one still queued for a thread is dropped: it would start with nobody waiting.
            future.cancel()
            raise HandlerTimeout(limit_s) from None

    def _executor(self) -> ThreadPoolExecutor:
        pool, pid = self._pool, os.getpid()
        if pool is not None and self._pid == pid:
            return pool
        with self._lock:
            if self._pool is None or self._pid != pid:
                # NOTE: a pool inherited over fork has no threads in the child; make a new one.
                self._pool = ThreadPoolExecutor(self._threads, thread_name_prefix="host-handler")
                self._pid = pid
            return self._pool


#: The process's handler pool.
RUNNER = Runner()
