"""The store's URL asks: kept in the records, submitted once, waited for through the queues.

:class:`Asking` is a part of :class:`host.store.shared.Store` (the contract is there).
"""

from __future__ import annotations

import time

from host.store.asks import UrlAsk, UrlAskRecords
from host.store.keeping import Keeping
from host.store.waiting import RECHECK_S

__all__ = ["Asking"]


class Asking(Keeping):
    """The URL asks of :class:`host.store.shared.Store`."""

    _asks: UrlAskRecords

    def open_ask(self, ask: UrlAsk) -> UrlAsk:
        """Keep ``ask`` until it expires, unless a live ask holds its binding: then that one."""
        return self._asks.open(ask, _ask_keep_s(ask))

    def ask(self, ask_id: str) -> UrlAsk | None:
        """The live ask with this id, or None (never made, ended, or expired)."""
        return self._asks.get(ask_id)

    def submit_ask(self, ask_id: str, values: dict[str, object]) -> UrlAsk | None:
        """Keep the page's values (already encrypted) once, and wake the call waiting on it.

        Returns:
            The ask as submitted; None when there is no such live ask, or it was submitted.
        """
        current = self._asks.get(ask_id)
        if current is None:
            return None
        done = self._asks.submit(ask_id, values, _ask_keep_s(current))
        if done is not None:
            self._queues.push(UrlAskRecords.wake_key(ask_id), "submitted", 60.0)
        return done

    def wait_ask(self, ask_id: str, timeout_s: float) -> UrlAsk | None:
        """The ask once submitted, or as it is after ``timeout_s`` (None once it is gone)."""
        deadline = time.monotonic() + timeout_s
        while True:
            current = self._asks.get(ask_id)
            left = deadline - time.monotonic()
            if current is None or current.submitted or left <= 0:
                return current
            self.pop(UrlAskRecords.wake_key(ask_id), max(0.0, min(left, RECHECK_S)))

    def end_ask(self, ask: UrlAsk) -> None:
        """Forget ``ask`` and its values (its call ended)."""
        self._asks.end(ask)


def _ask_keep_s(ask: UrlAsk) -> float:
    """How long an ask is kept from now: until it expires."""
    return max(1.0, ask.expires - time.time())
