"""A locked act: the lock taken before the act's claim, and held until the act really ends.

An act that outlives its time limit goes on running on its pool thread after the caller was told
so; its lock must stay held (the store's lease keeper renews it) until then. So the lock is
released by the act's own run, when it ends, and by the caller only when the act never started
(a concurrent copy of the round won the claim).
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from host.errors import StoreError
from host.machine.keys import KeyFunction, lock_key
from host.machine.types import CallContext, HeldLock, Outcome
from host.spec.templates import Renderer, compile_result

__all__ = ["LockStep", "lock_step", "locked"]

log = logging.getLogger("host.machine")


@dataclass(frozen=True)
class LockStep:
    """A compiled ``lock:``: its names, the key of their values, its wait and ``busy`` result."""

    names: tuple[str, ...]
    key: KeyFunction
    wait_s: float
    busy: Renderer | None

    def busy_outcome(self, tool: str, scope: Mapping[str, Any]) -> Outcome:
        """The result of a call that did not get the lock in time: nothing was done."""
        if self.busy is not None:
            value = self.busy(scope)
        else:
            held = ", ".join(f"{n} {scope[n]}" for n in self.names)
            waited = f", and still was after {self.wait_s:g} seconds" if self.wait_s else ""
            value = (
                f"The tool {tool} did nothing: another call is acting on {held}{waited}. "
                "Try again once it has finished."
            )
        return replace(Outcome.from_value(value), ending="busy")


def lock_step(names: Sequence[str], wait_s: float, busy: Any) -> LockStep:
    """Compile ``lock:``, ``lock_wait:`` and ``busy:`` (None: the host's text)."""
    return LockStep(
        tuple(names), lock_key(names), wait_s, None if busy is None else compile_result(busy)
    )


def locked(
    step: LockStep,
    tool: str,
    scope: Mapping[str, Any],
    ctx: CallContext,
    act: Callable[[], Outcome],
) -> Outcome:
    """``ctx.once(act)`` holding the lock, or the ``busy`` result without acting."""
    held = ctx.locks.acquire(step.key(scope), step.wait_s)
    if held is None:
        return step.busy_outcome(tool, scope)
    guard = _Guard(held, tool)
    try:
        return ctx.once(lambda: guard.run(act, lambda: step.busy_outcome(tool, scope)))
    finally:
        guard.abandon()


class _Guard:
    """Who releases the lock: the act when it ends, or the caller if it never started."""

    def __init__(self, held: HeldLock, tool: str) -> None:
        self._held = held
        self._tool = tool
        self._mutex = threading.Lock()
        self._state = "waiting"

    def run(self, act: Callable[[], Outcome], busy: Callable[[], Outcome]) -> Outcome:
        """Run the act, then release the lock (whatever the act did)."""
        with self._mutex:
            if self._state != "waiting":
                # NOTE: the caller gave up before the pool started the act, and freed the lock:
                # acting now would act unlocked.
                return busy()
            self._state = "running"
        try:
            return act()
        finally:
            self._release()

    def abandon(self) -> None:
        """The caller is done: release the lock unless the act started (it releases it then)."""
        with self._mutex:
            if self._state != "waiting":
                return
            self._state = "abandoned"
        self._release()

    def _release(self) -> None:
        try:
            if not self._held.release():
                log.warning(
                    "an act's lock lapsed before it ended",
                    extra={"event": "lock_lapsed", "tool": self._tool},
                )
        except StoreError as exc:
            log.warning(
                "could not release an act's lock (it comes free when its lease lapses): %s",
                exc.message,
                extra={"event": "lock_unreleased", "tool": self._tool},
            )
