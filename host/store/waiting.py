"""Waiting for relayed values: one watcher thread per store object wakes every waiter of a process.

A legacy client's question may stay open for minutes, and a machine must hold a thousand of them.
Polling the store once per waiter (or holding one blocking connection per waiter) costs CPU and
connections in proportion; instead each waiter registers the queue key it waits on and sleeps on
an event, and one thread per process (SQLite: one query per tick for everything pushed since the
last look; Redis: a notification per push) wakes the waiters of the keys that got a value. A woken
waiter then takes the value the usual way, so each value is still taken exactly once, across
processes.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterable, Iterator
from typing import TypeVar

from host.blocking import blocking
from host.store.threads import ProcessThread

__all__ = ["RECHECK_S", "Watcher", "backoff", "poll_until", "pop_waiting"]

T = TypeVar("T")

#: How often a waiting call looks at its request again when no wake-up came (another waiter
#: may have taken the one a decision pushed).
RECHECK_S = 0.5


class Watcher(ProcessThread):
    """Who in this process waits on which queue key, and the thread that wakes them.

    Subclasses implement :meth:`_run` (watch the store, call :meth:`wake`) and may override
    :meth:`_first_waiter` and :meth:`_ready`.
    """

    def _reset(self) -> None:
        self._waiting: dict[str, set[threading.Event]] = {}

    def register(self, key: str) -> threading.Event:
        """Wait on ``key``: the returned event is set whenever a value may have arrived for it."""
        event = threading.Event()
        with self._lock:
            if not self._waiting:
                self._first_waiter()
            self._waiting.setdefault(key, set()).add(event)
            self._start()
            self._changed.notify()
        self._ready()
        return event

    def unregister(self, key: str, event: threading.Event) -> None:
        """Stop waiting on ``key`` with ``event``."""
        with self._lock:
            events = self._waiting.get(key)
            if events is not None:
                events.discard(event)
                if not events:
                    del self._waiting[key]

    def wake(self, keys: Iterable[str]) -> None:
        """Set the events of every waiter on ``keys``."""
        with self._lock:
            for key in keys:
                for event in self._waiting.get(key, ()):
                    event.set()

    def waited(self) -> list[str]:
        """The keys someone in this process waits on now."""
        with self._lock:
            return list(self._waiting)

    def _idle(self) -> bool:
        """Block (with the lock held) until someone waits or the store closes; True to stop."""
        while not self._waiting and not self._stopping:
            self._changed.wait()
        return self._stopping

    def _first_waiter(self) -> None:
        """Called with the lock held when the first waiter arrives, before it is registered."""

    def _ready(self) -> None:
        """Called without the lock after a registration, before the waiter first looks."""


def pop_waiting(
    watcher: Watcher, key: str, timeout_s: float, take: Callable[[str], str | None]
) -> str | None:
    """Take the oldest value of ``key`` with ``take``, waiting on ``watcher`` up to ``timeout_s``.

    NOTE: the waiter registers before it first looks, and clears its event before each look: a
    value pushed before the look is found by it, and one pushed after sets the event, so no push
    is slept through.
    """
    if timeout_s <= 0:
        return take(key)
    deadline = time.monotonic() + timeout_s
    event = watcher.register(key)
    try:
        while True:
            event.clear()
            value = take(key)
            if value is not None:
                return value
            left = deadline - time.monotonic()
            if left <= 0:
                return None
            with blocking():
                event.wait(left)
    finally:
        watcher.unregister(key, event)


def backoff(first_s: float = 0.005, limit_s: float = 0.02) -> Iterator[float]:
    """Sleep lengths for polling: start short so a handover is quick, then settle at ``limit_s``."""
    delay = first_s
    while True:
        yield delay
        delay = min(delay * 1.5, limit_s)


def poll_until(
    look: Callable[[], T], done: Callable[[T], bool], timeout_s: float, limit_s: float
) -> T:
    """Call ``look`` with a gentle backoff until ``done`` says so of its value or time runs out.

    NOTE: waits for an act or a lock are rare (a retry arriving while its act runs, two acts
    wanting one lock) and short (a lease lapses within seconds), so polling beats a watcher
    thread here; the backoff settles at ``limit_s``, a few reads a second per waiter.

    Returns:
        The last value ``look`` gave (the one ``done`` accepted, or the one found at the end).
    """
    deadline = time.monotonic() + max(0.0, timeout_s)
    delays = backoff(0.01, limit_s)
    while True:
        found = look()
        if done(found):
            return found
        left = deadline - time.monotonic()
        if left <= 0:
            return found
        with blocking():
            time.sleep(min(next(delays), left))
