"""The Redis backend's connection: one bounded pool per process, and redis-py's errors translated.

redis-py is imported only here, when a Redis store is opened, so it stays an optional dependency
(the ``redis`` extra: see :func:`host.extras.install_line`).
"""

from __future__ import annotations

import logging
import math
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any
from urllib.parse import urlsplit, urlunsplit

from host.errors import StoreError
from host.extras import install_line

__all__ = ["RedisClient", "ms", "redact"]

log = logging.getLogger("host.store")

_CONNECTIONS = 50  # per process: callers beyond this many at once wait for a free connection
#: How long one command may wait for Redis's answer (the URL's ``socket_timeout=`` overrides it).
SOCKET_TIMEOUT_S = 5.0


def redact(url: str) -> str:
    """The URL with any password replaced by ``***``, fit for messages and logs."""
    parts = urlsplit(url)
    if parts.password is None:
        return url
    host = parts.hostname or ""
    if ":" in host:
        host = f"[{host}]"
    if parts.port is not None:
        host = f"{host}:{parts.port}"
    user = parts.username or ""
    return urlunsplit(parts._replace(netloc=f"{user}:***@{host}"))


def ms(seconds: float) -> int:
    """Whole milliseconds, at least 1 (Redis rejects 0 as an expiry)."""
    return max(1, math.ceil(seconds * 1000))


class RedisClient:
    """A connected redis-py client, the store's key prefix, and its error handling.

    Args:
        url: ``redis://[user:password@]host:port/db`` or ``rediss://...``; redis-py's query
            options pass through.
        prefix: Put before every key, so several deployments can share one Redis.

    Attributes:
        raw: The redis-py client (``decode_responses=True``).
        prefix: As given.
        url: The URL without its password.
        error: redis-py's base exception.
        refused: redis-py's exception for a command the server refused.

    Raises:
        host.errors.StoreError: redis-py is not installed, or the server cannot be reached.
    """

    def __init__(self, url: str, prefix: str, *, connect: bool = True) -> None:
        try:
            import redis
        except ImportError as exc:
            raise StoreError(
                f"the Redis store ({redact(url)}) needs redis-py: {install_line('redis')}"
            ) from exc
        self.url = redact(url)
        self.prefix = prefix
        self.error: type[Exception] = redis.RedisError
        self.refused: type[Exception] = redis.ResponseError
        self.closed = False
        # NOTE: redis-py's pool notices a fork and opens fresh connections in the child. It is
        # bounded (callers wait for a free connection) since waiting pops hold none of their own:
        # a thousand waiters woken at once share a few dozen connections.
        with self.errors("connect to"):
            pool = redis.BlockingConnectionPool.from_url(
                url,
                decode_responses=True,
                socket_connect_timeout=5.0,
                # NOTE: a Redis that stops answering (stopped, swapped out, a dead peer) must
                # be an outage its callers hear of (503), not a request that hangs for ever;
                # no command of the host blocks on the server (waits are watched, not popped).
                socket_timeout=SOCKET_TIMEOUT_S,
                max_connections=_CONNECTIONS,
                timeout=20,
            )
            self.raw: Any = redis.Redis(connection_pool=pool)
            if not connect:
                # NOTE: a worker of a host whose master checked this Redis: an outage now is
                # an outage, met by every command (503, /readyz not ready) until Redis is
                # back, not a reason for the worker to die.
                return
            try:
                self.raw.ping()
            except redis.ResponseError as exc:
                # NOTE: Redis refuses even PING while it cannot persist (MISCONF): it answered,
                # so it is reachable, and a worker must boot (not ready) rather than stop the
                # host; every write fails until Redis takes writes again.
                log.warning(
                    "the Redis store %s refuses writes now: %s",
                    self.url,
                    exc,
                    extra={"event": "store_refuses_writes"},
                )

    @contextmanager
    def errors(self, doing: str) -> Iterator[None]:
        """Turn redis-py's exceptions into StoreError naming the server (without its password)."""
        if self.closed:
            raise StoreError(f"the Redis store {self.url} is closed")
        try:
            yield
        except self.error as exc:
            raise StoreError(f"could not {doing} the Redis store {self.url}: {exc}") from exc

    def close(self) -> None:
        """Close the client's connections; every later use raises StoreError."""
        self.closed = True
        try:
            self.raw.close()
            self.raw.connection_pool.disconnect()
        except self.error as exc:  # pragma: no cover - closing a dead connection
            log.debug("closing %s: %s", self.url, exc)
