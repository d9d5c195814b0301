"""Reads on the request's own thread, answered at their limit by running the request again.

A read hands its handler to the pool (:mod:`host.machine.timing`) so that its caller can give up
at the limit; served, that handoff is two thread switches a read, a twentieth of a plain call's
server CPU. Where the server can answer a request from another thread (``host serve``'s worker,
:mod:`host.serve.rescue`), a read whose round has done nothing yet that a second run would do
again runs on the request's thread instead, watched here. Should it outrun its limit, the
watchdog starts :data:`RESCUER`: the server runs the same request again on a thread of its own,
with that read timed out at once (:data:`TIMED_OUT`), and answers the client with it, exactly as
the pool's caller would have. When the stuck read returns at last, its request raises
:class:`Superseded` and ends without a word: the answer was given, its round logged and audited
once, by the run that gave it.

NOTE: the watchdog thread sleeps until the earliest deadline it holds (or, holding none, for the
shortest limit it has seen) and is woken only for an earlier one: a read costs a lock and a set
entry, never a thread switch.
"""

from __future__ import annotations

import contextvars
import logging
import os
import threading
import time
from collections.abc import Callable

__all__ = ["RESCUER", "TIMED_OUT", "WATCHDOG", "Superseded", "Watch", "Watchdog"]

log = logging.getLogger("host.machine")

#: Set by a server for a request it can answer again from another thread: called with the tool's
#: and the read's names when that read outruns its limit, on a thread of its own.
RESCUER: contextvars.ContextVar[Callable[[str, str], None] | None] = contextvars.ContextVar(
    "host_rescuer", default=None
)
#: Set for a request run again for the read that outran its limit: that read's tool and name.
TIMED_OUT: contextvars.ContextVar[tuple[str, str] | None] = contextvars.ContextVar(
    "host_timed_out", default=None
)


class Superseded(BaseException):
    """The read returned after its limit: the request was answered by another run of it.

    NOTE: a BaseException, like ``GeneratorExit``: no ``except Exception`` on the way up may
    turn it into an answer, a log line or an audit record.
    """


class Watch:
    """One read being watched: its deadline, and what to start should it pass."""

    __slots__ = ("deadline", "fire", "fired")

    def __init__(self, deadline: float, fire: Callable[[], None]) -> None:
        self.deadline = deadline
        self.fire = fire
        self.fired = False


class Watchdog:
    """The process's watch over reads run on their request's thread (made per process)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._woken = threading.Condition(self._lock)
        self._watched: set[Watch] = set()
        self._wake_at = float("inf")
        self._horizon = float("inf")  # NOTE: the shortest limit watched yet
        self._started = False
        # NOTE: a forked child (a gunicorn worker) has no thread of its parent's: it starts its
        # own on its first watch.
        os.register_at_fork(after_in_child=self._forked)

    def _forked(self) -> None:
        self._lock = threading.Lock()
        self._woken = threading.Condition(self._lock)
        self._watched, self._wake_at, self._started = set(), float("inf"), False
        self._horizon = float("inf")

    def watch(self, limit_s: float, fire: Callable[[], None]) -> Watch:
        """Start watching a read: ``fire`` runs, on a new thread, if it outruns ``limit_s``."""
        watch = Watch(time.monotonic() + limit_s, fire)
        with self._lock:
            if not self._started:
                self._started = True
                threading.Thread(target=self._run, name="host-watchdog", daemon=True).start()
            self._watched.add(watch)
            self._horizon = min(self._horizon, limit_s)
            if watch.deadline < self._wake_at:
                self._woken.notify()
        return watch

    def done(self, watch: Watch) -> bool:
        """The read returned: whether in time (else it was superseded, and the answer given)."""
        with self._lock:
            self._watched.discard(watch)
            return not watch.fired

    def _run(self) -> None:
        while True:
            with self._lock:
                now = time.monotonic()
                due = [w for w in self._watched if w.deadline <= now]
                for watch in due:
                    watch.fired = True
                    self._watched.discard(watch)
                # NOTE: with nothing watched it still wakes a horizon on: a read watched
                # meanwhile, of no shorter a limit, is due no sooner, so it need not wake it.
                self._wake_at = min(
                    (w.deadline for w in self._watched), default=now + self._horizon
                )
                if not due:
                    wait = self._wake_at - now
                    self._woken.wait(None if wait == float("inf") else wait)
                    continue
            for watch in due:
                threading.Thread(
                    target=_fire, args=(watch,), name="host-rescue", daemon=True
                ).start()


def _fire(watch: Watch) -> None:
    try:
        watch.fire()
    except Exception:
        log.exception(
            "a read past its limit could not be answered", extra={"event": "rescue_failed"}
        )


#: The process's watchdog.
WATCHDOG = Watchdog()
