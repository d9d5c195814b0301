"""Locks held within one process: what ``ctx.locks`` is when no store serves the call.

A call run by the machine alone (a dry run, a test of one machine) still acts one at a time per
lock inside its process; serving, the protocol layer gives each round the store's locks instead,
shared by every worker and instance.
"""

from __future__ import annotations

import threading

__all__ = ["PROCESS_LOCKS", "ProcessLocks"]


class _Held:
    """One lock of :class:`ProcessLocks`, held until released."""

    def __init__(self, locks: ProcessLocks, name: str) -> None:
        self._locks = locks
        self._name = name
        self._released = False

    def release(self) -> bool:
        """Free it for the next caller; whether it was still held."""
        if self._released:
            return False
        self._released = True
        self._locks.free(self._name)
        return True


class ProcessLocks:
    """Named locks of this process: one holder per name, waiters woken as it comes free."""

    def __init__(self) -> None:
        self._held: set[str] = set()
        self._changed = threading.Condition()

    def acquire(self, name: str, wait_s: float) -> _Held | None:
        """Hold ``name``, waiting up to ``wait_s`` for it; None if it stayed held."""
        with self._changed:
            if not self._changed.wait_for(lambda: name not in self._held, timeout=wait_s):
                return None
            self._held.add(name)
        return _Held(self, name)

    def free(self, name: str) -> None:
        """Let the next caller have ``name``."""
        with self._changed:
            self._held.discard(name)
            self._changed.notify_all()


#: This process's locks: the default ``ctx.locks``.
PROCESS_LOCKS = ProcessLocks()
