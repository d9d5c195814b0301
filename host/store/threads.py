"""Background threads of a store object: one per object and process, started when first needed.

Threads do not survive ``fork``. A forked child (a gunicorn worker forked from a preloading
master) gets fresh, empty state and starts its own thread when it first needs one; what the
parent's thread was doing (the leases it renewed, the waiters it watched for) stays the parent's.
"""

from __future__ import annotations

import logging
import os
import threading
import weakref

__all__ = ["ProcessThread"]

log = logging.getLogger("host.store")

_everyone: weakref.WeakSet[ProcessThread] = weakref.WeakSet()


def _reset_in_child() -> None:
    # NOTE: runs in the child right after fork, while it has one thread: the inherited locks may
    # be held by threads that no longer exist there, so they are replaced, never acquired.
    for each in list(_everyone):
        each._fresh()


os.register_at_fork(after_in_child=_reset_in_child)


class ProcessThread:
    """A daemon thread that runs :meth:`_run` for one object in one process.

    Subclasses keep their per-process state in attributes that :meth:`_reset` sets, and guard it
    with ``self._lock``; ``self._changed`` (a condition on that lock) wakes the thread, and
    ``self._stopping`` is set once :meth:`stop` was called.

    Args:
        name: The thread's name, for debuggers and thread dumps.
    """

    def __init__(self, name: str) -> None:
        self._name = name
        self._stopped_for_good = False
        self._fresh()
        _everyone.add(self)

    def _fresh(self) -> None:
        self._lock = threading.Lock()
        self._changed = threading.Condition(self._lock)
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._stopping = self._stopped_for_good
        if self._stopping:
            self._stop.set()
        self._reset()

    def _reset(self) -> None:
        """Set up this process's state (again in a forked child). Called without the lock."""

    def _run(self) -> None:
        """The thread's body: return once ``self._stopping`` is set."""
        raise NotImplementedError

    def _start(self) -> None:
        """Start the thread unless it runs (call with ``self._lock`` held)."""
        if self._thread is None and not self._stopping:
            self._thread = threading.Thread(target=self._main, name=self._name, daemon=True)
            self._thread.start()

    def stop(self) -> None:
        """Ask the thread to end soon; it never starts again for this object."""
        with self._lock:
            self._stopped_for_good = self._stopping = True
            self._stop.set()
            self._changed.notify_all()

    def _main(self) -> None:
        try:
            self._run()
        except Exception:  # pragma: no cover - a bug; the next caller starts a new thread
            log.exception("the store's %s thread failed", self._name)
        finally:
            with self._lock:
                if self._thread is threading.current_thread():
                    self._thread = None
