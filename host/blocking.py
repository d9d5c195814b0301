"""A thread about to wait says so, and the worker runs another request meanwhile.

A served worker runs only a few requests on the CPU at once (:mod:`host.serve.pool`), however
many it holds. A request that waits on the disk (a durable commit) or for a person (a legacy
question's answer) gives its turn away while it waits, and counts again once it is back. A wait
nobody marks (a slow client, a hanging handler) gives its turn away too, once it has lasted long
enough, so marking a wait is only ever a matter of speed.

NOTE: the seam is a thread-local, set by the pool on its own threads: the store and the machine
say that they wait without knowing who serves them. Off the pool's threads (a handler's thread,
``host call``, the tests' in-process app) :func:`blocking` finds no turn and gives nothing away.
"""

from __future__ import annotations

import threading
from typing import Protocol

__all__ = ["Turn", "blocking", "hold"]


class Turn(Protocol):
    """What the thread's pool does when the thread starts and stops waiting."""

    def leave(self) -> None:
        """The thread is about to wait: let another request run."""

    def back(self) -> None:
        """The thread waits no more: count it as running again."""


_local = threading.local()


def hold(turn: Turn | None) -> None:
    """Make ``turn`` the calling thread's (the pool does, on each of its threads)."""
    _local.turn = turn


class blocking:  # NOTE: lower case: used as a function, ``with blocking():``
    """Around a wait: the calling thread's turn is given away until the wait ends.

    NOTE: a class, not a generator-based context manager: every durable commit and every store
    poll enters one, and a generator's set-up costs several times a call's.
    """

    __slots__ = ("_turn",)

    def __enter__(self) -> None:
        turn: Turn | None = getattr(_local, "turn", None)
        self._turn = turn
        if turn is not None:
            turn.leave()

    def __exit__(self, *exc: object) -> None:
        if self._turn is not None:
            self._turn.back()
