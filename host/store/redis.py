"""The shared store in Redis, for host instances on several machines.

Records live under ``<prefix>v:<key>``; the claim of an act that is running lives beside its value
under ``<prefix>c:<key>`` (``SET NX PX``, holding a random token), and queues under
``<prefix>q:<key>`` (``RPUSH``/``BLPOP`` with the key's expiry). Waiters poll the value key with
short sleeps: a handover is a few milliseconds late at worst, and no message can be missed. Token
checks that must be atomic are two tiny Lua scripts. redis-py is imported only here, so it stays
an optional dependency (``pip install 'host[redis]'``).
"""

from __future__ import annotations

import logging
import math
import os
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any
from urllib.parse import urlsplit, urlunsplit

from host.errors import StoreError
from host.store.base import Claim, check_ttl, run_once

__all__ = ["RedisStore", "redact"]

log = logging.getLogger("host.store")

# Delete the claim only if it is still ours: a claim that lapsed may belong to someone else now.
_RELEASE = """
if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('del', KEYS[1]) end
return 0
"""

# Record the value, then drop our claim; 0 tells the caller the claim had lapsed meanwhile.
_RECORD = """
redis.call('set', KEYS[1], ARGV[2], 'PX', ARGV[3])
if redis.call('get', KEYS[2]) == ARGV[1] then redis.call('del', KEYS[2]) return 1 end
return 0
"""


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


def _ms(seconds: float) -> int:
    return max(1, math.ceil(seconds * 1000))


class RedisStore:
    """A :class:`host.store.base.Store` in Redis (6 or newer).

    Args:
        url: ``redis://[user:password@]host:port/db`` or ``rediss://...`` for TLS; redis-py's
            query options (``socket_timeout=...``) pass through.
        prefix: Put before every key, so several deployments can share one Redis.

    Raises:
        host.errors.StoreError: redis-py is not installed, or the server cannot be reached.
    """

    def __init__(self, url: str, *, prefix: str = "host:") -> None:
        try:
            import redis
        except ImportError as exc:
            raise StoreError(
                f"the Redis store ({redact(url)}) needs redis-py: pip install 'host[redis]'"
            ) from exc
        self._url = redact(url)
        self._error: type[Exception] = redis.RedisError
        self._prefix = prefix
        self._closed = False
        # NOTE: redis-py's pool notices a fork and opens fresh connections in the child.
        with self._errors("connect to"):
            self._client: Any = redis.Redis.from_url(
                url, decode_responses=True, socket_connect_timeout=5.0
            )
            self._client.ping()
        self._release = self._client.register_script(_RELEASE)
        self._record = self._client.register_script(_RECORD)

    def __repr__(self) -> str:
        return f"RedisStore({self._url!r})"

    # -- the Store interface -------------------------------------------------------------------

    def once(self, key: str, ttl_s: float, compute: Callable[[], str], wait_s: float = 30.0) -> str:
        """Run ``compute`` at most once for ``key``; see :meth:`host.store.base.Store.once`."""
        check_ttl(ttl_s)
        value_key, claim_key = self._prefix + "v:" + key, self._prefix + "c:" + key
        token = os.urandom(12).hex()

        def claim() -> Claim:
            with self._errors("read"):
                value = self._client.get(value_key)
                if value is not None:
                    return False, str(value)
                if not self._client.set(claim_key, token, nx=True, px=_ms(ttl_s)):
                    return False, None
                # The previous owner may have recorded and dropped its claim between our
                # GET and SET: then the value is there and nothing must run.
                value = self._client.get(value_key)
                if value is None:
                    return True, None
                self._release(keys=[claim_key], args=[token])
                return False, str(value)

        def release() -> None:
            try:
                with self._errors("release a claim in"):
                    self._release(keys=[claim_key], args=[token])
            except StoreError as exc:
                # The act's own exception matters more; the claim then lapses with its ttl.
                log.warning("could not release the claim on %r: %s", key, exc)

        def record(value: str) -> None:
            with self._errors("write"):
                kept = self._record(keys=[value_key, claim_key], args=[token, value, _ms(ttl_s)])
            if not kept:
                log.warning(
                    "the claim on %r expired before its act finished; ttl_s=%g is too short",
                    key,
                    ttl_s,
                )

        return run_once(key, wait_s, claim, compute, release, record)

    def add(self, key: str, value: str, ttl_s: float) -> bool:
        """Insert if absent; see :meth:`host.store.base.Store.add`."""
        check_ttl(ttl_s)
        with self._errors("write"):
            return bool(self._client.set(self._prefix + "v:" + key, value, nx=True, px=_ms(ttl_s)))

    def get(self, key: str) -> str | None:
        """The live value for ``key``; see :meth:`host.store.base.Store.get`."""
        with self._errors("read"):
            value = self._client.get(self._prefix + "v:" + key)
        return None if value is None else str(value)

    def put(self, key: str, value: str, ttl_s: float) -> None:
        """Insert or overwrite; see :meth:`host.store.base.Store.put`."""
        check_ttl(ttl_s)
        with self._errors("write"):
            self._client.set(self._prefix + "v:" + key, value, px=_ms(ttl_s))

    def delete(self, key: str) -> None:
        """Remove the record and any claim; see :meth:`host.store.base.Store.delete`."""
        with self._errors("write"):
            self._client.delete(self._prefix + "v:" + key, self._prefix + "c:" + key)

    def push(self, key: str, value: str, ttl_s: float) -> None:
        """Append to a queue; see :meth:`host.store.base.Store.push`."""
        check_ttl(ttl_s)
        queue_key = self._prefix + "q:" + key
        with self._errors("write"):
            pipe = self._client.pipeline(transaction=True)
            pipe.rpush(queue_key, value)
            pipe.pexpire(queue_key, _ms(ttl_s))
            pipe.execute()

    def pop(self, key: str, timeout_s: float) -> str | None:
        """Take the oldest value, blocking in Redis; see :meth:`host.store.base.Store.pop`."""
        queue_key = self._prefix + "q:" + key
        with self._errors("read"):
            if timeout_s <= 0:  # BLPOP's 0 would mean "wait forever"
                value = self._client.lpop(queue_key)
                return None if value is None else str(value)
            # Redis takes fractional seconds; at least 1 ms, so it never means "forever".
            found = self._client.blpop([queue_key], timeout=max(timeout_s, 0.001))
        return None if found is None else str(found[1])

    def health(self) -> str | None:
        """None if Redis answers and takes a write; see :meth:`host.store.base.Store.health`."""
        try:
            with self._errors("write to"):
                self._client.set(self._prefix + "health", str(os.getpid()), px=60_000)
        except StoreError as exc:
            return exc.message
        return None

    def close(self) -> None:
        """Close the client's connections."""
        self._closed = True
        try:
            self._client.close()
        except self._error as exc:  # pragma: no cover - closing a dead connection
            log.debug("closing %s: %s", self._url, exc)

    # -- helpers -------------------------------------------------------------------------------

    @contextmanager
    def _errors(self, doing: str) -> Iterator[None]:
        """Turn redis-py's exceptions into StoreError naming the server (without its password)."""
        if self._closed:
            raise StoreError(f"the Redis store {self._url} is closed")
        try:
            yield
        except self._error as exc:
            raise StoreError(f"could not {doing} the Redis store {self._url}: {exc}") from exc
