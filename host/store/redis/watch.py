"""The Redis store's watcher: a notification per push, and a slow re-check in case one is lost.

Every ``push`` also publishes its queue's key on ``<prefix>pushed``. While anyone in the process
waits, the watcher holds one subscription (one connection, however many wait) and wakes the
waiters of each key it hears about. Pub/sub delivers at most once: a notification sent while the
subscription is down (Redis restarting, a network blip) is gone. So the value itself stays in the
list, where any waiter takes it, and every few seconds, and at once after each (re)subscription,
the watcher asks which waited keys have values: a lost notification costs seconds, never the answer.
"""

from __future__ import annotations

import logging
import threading
import time
from typing import Any

from host.store.waiting import Watcher, backoff

__all__ = ["RedisWatcher"]

log = logging.getLogger("host.store")

_CHECK_CHUNK = 1000  # EXISTS per pipeline round trip in a re-check


class RedisWatcher(Watcher):
    """Wakes this process's waiters on the Redis store's queues.

    Args:
        client: The store's redis-py client (``decode_responses=True``).
        prefix: The store's key prefix: queues are ``<prefix>q:<key>``.
        recheck_s: How often to look for values whose notification was lost.
        error: redis-py's base exception.
        what: The store, as named in log messages.
    """

    def __init__(
        self, client: Any, prefix: str, recheck_s: float, error: type[Exception], what: str
    ) -> None:
        self._client = client
        self._prefix = prefix
        self.channel = prefix + "pushed"
        self.recheck_s = recheck_s
        self._error = error
        self._what = what
        super().__init__("host-store-waiters")

    def _reset(self) -> None:
        super()._reset()
        # Set once the watcher has tried to subscribe for the current waiters (and succeeded, or
        # failed: then the re-check after it reconnects finds what was pushed meanwhile).
        self._tried = threading.Event()

    def _ready(self) -> None:
        # NOTE: a push is only heard if it is published after Redis processed SUBSCRIBE, so the
        # first waiter looks at its queue only once the subscription is confirmed.
        self._tried.wait(2.0)

    def _run(self) -> None:
        pubsub: Any = None
        delays = backoff(0.1, 2.0)
        due = 0.0
        try:
            while True:
                with self._lock:
                    if not self._waiting and pubsub is not None:
                        self._tried.clear()  # with the lock: the next first waiter waits for us
                        self._close(pubsub)  # nobody waits: hold no connection
                        pubsub = None
                    if self._idle():
                        return
                if pubsub is None:
                    pubsub = self._subscribe()
                    self._tried.set()
                    if pubsub is None:
                        self._stop.wait(next(delays))
                        continue
                    delays = backoff(0.1, 2.0)
                    due = 0.0  # look at once: notifications sent while away are lost
                now = time.monotonic()
                if now >= due:
                    due = now + self.recheck_s
                    self._recheck()
                try:
                    message = pubsub.get_message(timeout=min(1.0, max(0.0, due - now)))
                except Exception as exc:
                    if self._stopping:
                        return  # the store closed the connection under us: that is the end
                    if not isinstance(exc, self._error):
                        raise
                    log.warning("lost the subscription to %s; resubscribing: %s", self._what, exc)
                    self._tried.clear()
                    self._close(pubsub)
                    pubsub = None
                    continue
                if message is not None and message.get("type") == "message":
                    self.wake([str(message["data"])])
        finally:
            if pubsub is not None:
                self._close(pubsub)

    def _subscribe(self) -> Any:
        """A confirmed subscription to the push channel, or None if Redis cannot be reached."""
        pubsub = self._client.pubsub()
        try:
            pubsub.subscribe(self.channel)
            deadline = time.monotonic() + 5.0
            while time.monotonic() < deadline:
                message = pubsub.get_message(timeout=1.0)
                if message is not None and message.get("type") == "subscribe":
                    return pubsub
        except self._error as exc:
            log.warning("cannot subscribe to pushes in %s: %s", self._what, exc)
        self._close(pubsub)
        return None

    def _close(self, pubsub: Any) -> None:
        try:
            pubsub.close()
        except self._error as exc:  # pragma: no cover - closing a dead connection
            log.debug("closing a subscription to %s: %s", self._what, exc)

    def _recheck(self) -> None:
        """Wake the waiters of every waited key whose queue has a value."""
        keys = self.waited()
        found: list[str] = []
        try:
            for start in range(0, len(keys), _CHECK_CHUNK):
                chunk = keys[start : start + _CHECK_CHUNK]
                pipe = self._client.pipeline(transaction=False)
                for key in chunk:
                    pipe.exists(self._prefix + "q:" + key)
                found.extend(key for key, there in zip(chunk, pipe.execute(), strict=True) if there)
        except self._error as exc:
            log.debug("re-checking the queues in %s failed: %s", self._what, exc)
        self.wake(found)
