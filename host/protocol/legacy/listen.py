"""A legacy session's GET stream: ``notifications/tools/list_changed``, and keep-alives meanwhile.

Legacy clients open ``GET /mcp`` with their session id to hear what the server has to say outside
any request. A tool host has one such thing: its tool list changed (the specs were reloaded). Each
``tools/list`` a session makes records, in the store, the digest of the list it was shown
(:attr:`ToolHost.generation`); a stream that opens on a process serving another list tells the
session at once. A reload replaces every worker, and a stopping worker ends its streams, so
clients reconnect to a new worker and are told there.

NOTE: under gunicorn's gthread workers every open stream holds one of the worker's threads for as
long as it stays open, so a process keeps at most :attr:`LegacyOptions.listeners` of them (256,
a quarter of ``host serve``'s threads, leaving the rest to questions and requests); one more is
answered 503 with ``Retry-After``. A stream ends when its client goes away (checked every
second, where the transport can tell), when the session ends, expires or is evicted, or when the
worker stops. An open stream is a session in use: its checks renew the session's place.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Generator

from host.protocol.core import ToolHost
from host.protocol.endpoint import Reply
from host.protocol.jsonrpc import INTERNAL_ERROR, error, failure
from host.protocol.legacy.places import SessionPlaces
from host.protocol.legacy.sessions import LegacyOptions, Session
from host.protocol.streams import NO_BUFFERING, Event, EventStream
from host.store import Store

__all__ = ["LIST_CHANGED", "Listeners"]

log = logging.getLogger("host.protocol.listen")

LIST_CHANGED = "notifications/tools/list_changed"
_SEEN = "tools-seen:"
#: How often a waiting stream looks at its stop conditions, in seconds.
_POLL_S = 1.0


class Listeners:
    """The GET streams of one process's legacy sessions.

    Args:
        host: The tools served here (their :attr:`ToolHost.generation`).
        store: Where each session's last seen list digest is kept.
        options: Keep-alive interval and the most streams open at once.
        places: The sessions' places, checked (and renewed) while a stream is open.
    """

    def __init__(
        self, host: ToolHost, store: Store, options: LegacyOptions, places: SessionPlaces
    ) -> None:
        self.host = host
        self.store = store
        self.options = options
        self.places = places
        self._slots = threading.BoundedSemaphore(options.listeners)

    def seen(self, session: Session) -> None:
        """Record that ``session`` was just shown this process's tool list.

        NOTE: written only when it changes: a client lists tools often, the list changes at
        reloads only.
        """
        if self.store.get(_SEEN + session.id) == self.host.generation:
            return
        ttl = max(session.expires - time.time(), 1.0)
        self.store.put(_SEEN + session.id, self.host.generation, ttl)

    def forget(self, session_id: str) -> None:
        """Drop what :meth:`seen` kept for a session (it ended, or was evicted)."""
        self.store.delete(_SEEN + session_id)

    def open(self, session: Session, stopping: threading.Event, gone: Callable[[], bool]) -> Reply:
        """The stream for ``session``, or 503 when this process holds as many as it may.

        Args:
            session: The session that listens.
            stopping: Set when the process stops: the stream ends, so the client reconnects
                to a process that still serves.
            gone: Whether the client has closed the connection (the transport's best guess).
        """
        if not self._slots.acquire(blocking=False):
            log.warning(
                "listen stream refused: too many open",
                extra={"event": "listen_refused", "session": session.tag},
            )
            busy = error(
                INTERNAL_ERROR,
                "Service unavailable: this worker holds as many GET streams as it may; "
                "try again later",
            )
            return Reply(503, failure(None, busy), {"Retry-After": "30"})
        release = _Once(self._slots.release)
        events = self._events(session, stopping, gone, release)
        return Reply(200, headers=NO_BUFFERING, stream=_Stream(events, release))

    def _events(
        self,
        session: Session,
        stopping: threading.Event,
        gone: Callable[[], bool],
        release: _Once,
    ) -> Generator[Event, None, None]:
        try:
            seen = self.store.get(_SEEN + session.id)
            changed = seen is not None and seen != self.host.generation
            log.info(
                "listen stream opened",
                extra={"event": "listen_opened", "session": session.tag, "changed": changed},
            )
            # NOTE: something goes out at once, so the client gets the response headers now.
            yield {"jsonrpc": "2.0", "method": LIST_CHANGED} if changed else None
            beat = time.monotonic()
            while not stopping.wait(_POLL_S):
                if gone():
                    return
                if time.monotonic() - beat >= self.options.keepalive_s:
                    if time.time() >= session.expires or not self.places.holds(session):
                        return
                    yield None
                    beat = time.monotonic()
        finally:
            release()


class _Once:
    """Calls ``action`` the first time it is called, and never again."""

    def __init__(self, action: Callable[[], object]) -> None:
        self._action = action
        self._lock = threading.Lock()
        self._done = False

    def __call__(self) -> None:
        with self._lock:
            if self._done:
                return
            self._done = True
        self._action()


class _Stream(EventStream):
    """An event stream that gives its slot back when closed, even if it never started."""

    def __init__(self, events: Generator[Event, None, None], release: _Once) -> None:
        super().__init__(events)
        self._release = release

    def close(self) -> None:
        """Stop the stream and free its slot."""
        try:
            super().close()
        finally:
            self._release()
