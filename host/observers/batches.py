"""Work taken off the request path: items queued by request threads, handled in batches.

A :class:`Batches` queues what request threads hand it (without waiting) and gives them, a few
milliseconds' worth at a time, to one function on a background thread of its own, one per process
(a gunicorn worker forked from a process that used one starts its own). So a store write that
costs a transaction per call costs one transaction per batch, and no request waits for it.

What is queued is handled before the process exits normally (an ``atexit`` hook flushes every
batcher); a process that is killed or crashes loses what was still queued: at most the last
``window_s`` of items, plus the batch being handled.
"""

from __future__ import annotations

import atexit
import logging
import os
import queue
import threading
import time
import weakref
from collections.abc import Callable, Sequence
from threading import Event
from typing import Generic, TypeVar

__all__ = ["Batches", "flush_all"]

log = logging.getLogger("host.observers")

T = TypeVar("T")

#: Every live batcher, flushed when the process exits.
_LIVE: weakref.WeakSet[Batches[object]] = weakref.WeakSet()


class Batches(Generic[T]):
    """Hands queued items to ``handle`` in batches, on a background thread.

    Args:
        handle: Called with each batch, in the order the items were queued, on the batcher's
            thread; what it raises is logged, and the batch is handed to it again one item at a
            time (an item that fails alone is dropped).
        name: The thread's name.
        window_s: How long the thread gathers items after the first of a batch.
        most: The most items in one batch.
    """

    def __init__(
        self,
        handle: Callable[[Sequence[T]], None],
        name: str,
        *,
        window_s: float = 0.005,
        most: int = 512,
    ) -> None:
        self._handle = handle
        self._name = name
        self._window_s = window_s
        self._most = most
        self._lock = threading.Lock()
        self._queue: queue.SimpleQueue[T | Event] = queue.SimpleQueue()
        self._pid = -1
        _LIVE.add(self)  # type: ignore[arg-type]

    def put(self, item: T) -> None:
        """Queue ``item``; it is handled within about ``window_s``. Never waits."""
        if self._pid != os.getpid():
            self._start()
        self._queue.put(item)

    def flush(self, timeout_s: float = 10.0) -> bool:
        """Wait until everything queued before this call is handled; False if it took longer."""
        if self._pid != os.getpid():
            return True  # nothing was queued in this process
        done = Event()
        self._queue.put(done)
        return done.wait(timeout_s)

    def _start(self) -> None:
        with self._lock:
            if self._pid == os.getpid():
                return
            # NOTE: a queue inherited over fork may hold the parent's items; they are its own.
            self._queue = queue.SimpleQueue()
            thread = threading.Thread(target=self._run, name=self._name, daemon=True)
            thread.start()
            self._pid = os.getpid()

    def _run(self) -> None:
        q = self._queue
        while True:
            items, flushed = self._gather(q)
            if items:
                self._handle_safely(items)
            for done in flushed:
                done.set()

    def _handle_safely(self, items: list[T]) -> None:
        """Hand ``items`` over; if that fails, hand them again one at a time."""
        try:
            self._handle(items)
            return
        except Exception:
            log.exception(
                "a batch of background work failed",
                extra={"event": "batch_failed", "items": len(items)},
            )
        if len(items) == 1:
            return
        # NOTE: one item that cannot be handled must not take the rest of its batch with it.
        for item in items:
            try:
                self._handle([item])
            except Exception:
                log.exception(
                    "an item of background work failed",
                    extra={"event": "batch_item_failed"},
                )

    def _gather(self, q: queue.SimpleQueue[T | Event]) -> tuple[list[T], list[Event]]:
        """One batch: what is queued ``window_s`` after its first item (a flush: at once)."""
        items: list[T] = []
        flushed: list[Event] = []
        item = q.get()
        if not isinstance(item, Event):
            # NOTE: one sleep, not a wait per item: every wake-up of this thread costs the
            # request threads a turn of the GIL. A flush meanwhile waits at most the window.
            time.sleep(self._window_s)
        while True:
            if isinstance(item, Event):
                flushed.append(item)
            else:
                items.append(item)
            if len(items) >= self._most:
                return items, flushed
            try:
                item = q.get_nowait()
            except queue.Empty:
                return items, flushed


@atexit.register
def flush_all() -> None:
    """Handle what every batcher still holds before the process exits."""
    for batches in list(_LIVE):
        batches.flush(5.0)
