"""Sessions' places in the store: taken at ``initialize``, renewed while used, checked per request.

A principal holds at most ``HOST_LIMIT_SESSIONS`` places; a new session past it evicts the one its
principal used least recently, whose next request gets 404 (MCP clients then start a new
session). So a client that abandons sessions without ``DELETE`` (the TypeScript SDK's ``close()``,
a restarted editor) is never locked out, and the store keeps at most that many places each.

"Used" is cheap: each worker renews a session's place at most once a minute (or sixty times per
``HOST_SESSION_TTL`` when that is shorter than an hour, so the order stays honest), and remembers
when in a small bounded memo; every other request only reads the place.
"""

from __future__ import annotations

import logging
import threading
import time
from collections import OrderedDict
from collections.abc import Callable

from host.protocol.legacy.sessions import LegacyOptions, Session, session_tag
from host.store import Store

__all__ = ["SessionPlaces"]

log = logging.getLogger("host.protocol.legacy")

#: Sessions whose last renewal one worker remembers; a forgotten one is only renewed early.
_MEMO_SIZE = 10_000
#: The least time between two renewals of one session by one worker.
_RENEW_EVERY_S = 60.0


class SessionPlaces:
    """The places of one worker's legacy sessions.

    Args:
        store: The shared store.
        options: The sessions' TTL (a place's sliding window) and the limit per principal.
        clock: A monotonic time source (tests pass their own).
    """

    def __init__(
        self,
        store: Store,
        options: LegacyOptions,
        *,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.store = store
        self.options = options
        self._every_s = min(_RENEW_EVERY_S, options.session_ttl_s / 60)
        self._clock = clock
        self._renewed: OrderedDict[str, float] = OrderedDict()
        self._lock = threading.Lock()

    def take(self, session: Session, *, limited: bool) -> list[str]:
        """Give a new session its place; the ids of the sessions it evicted.

        NOTE: anonymous callers are everyone at once, so they are not limited as one principal
        (``limited=False``); their sessions still take places, since a place keeps a session open.
        """
        most = self.options.sessions if limited else None
        evicted = self.store.take_place(*session.place, most=most, ttl_s=self.options.session_ttl_s)
        self._remember(session.id, due=False)
        for gone in evicted:
            self._forget(gone)
            log.info(
                "session evicted: its principal opened one past the limit",
                extra={"event": "session_evicted", "principal": session.principal,
                       "session": session_tag(gone), "limit": most},
            )  # fmt: skip
        return evicted

    def holds(self, session: Session) -> bool:
        """Whether the session still has its place, renewing it when this worker's turn is due."""
        if not self._remember(session.id, due=True):
            return self.store.holds_place(*session.place)
        held = self.store.renew_place(*session.place, ttl_s=self.options.session_ttl_s)
        if not held:
            self._forget(session.id)
        return held

    def give(self, session: Session) -> None:
        """Free the session's place (it ended)."""
        self.store.give_place(*session.place)
        self._forget(session.id)

    def _remember(self, session_id: str, *, due: bool) -> bool:
        """Note a renewal now; with ``due``, only when the last one is old (whether noted)."""
        now = self._clock()
        with self._lock:
            last = self._renewed.get(session_id)
            if due and last is not None and now - last < self._every_s:
                return False
            self._renewed[session_id] = now
            self._renewed.move_to_end(session_id)
            if len(self._renewed) > _MEMO_SIZE:
                self._renewed.popitem(last=False)
        return True

    def _forget(self, session_id: str) -> None:
        with self._lock:
            self._renewed.pop(session_id, None)
