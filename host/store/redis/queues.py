"""Queues in Redis: a list ``<prefix>q:<key>`` per queue, each push announced for the watcher.

``RPUSH``/``LPOP`` with the key's expiry; each push is also published on ``<prefix>pushed`` for
:mod:`host.store.redis.watch`, so a waiting ``pop`` holds no connection of its own.
"""

from __future__ import annotations

from host.store.redis.client import RedisClient, ms
from host.store.redis.watch import RedisWatcher

__all__ = ["RedisQueues"]


class RedisQueues:
    """The queues of one Redis store.

    Args:
        client: The store's client.
        recheck_s: How often the watcher looks for values whose push notification was lost.
    """

    def __init__(self, client: RedisClient, recheck_s: float) -> None:
        self._client = client
        self._raw = client.raw
        self._key = client.prefix + "q:"
        self.watcher = RedisWatcher(client.raw, client.prefix, recheck_s, client.error, client.url)

    def push(self, key: str, value: str, ttl_s: float) -> None:
        """Append ``value`` and announce it, in one transaction."""
        queue_key = self._key + key
        with self._client.errors("write"):
            pipe = self._raw.pipeline(transaction=True)
            pipe.rpush(queue_key, value)
            pipe.pexpire(queue_key, ms(ttl_s))
            pipe.publish(self.watcher.channel, key)
            pipe.execute()

    def take(self, key: str) -> str | None:
        """Take the oldest value of ``key`` now (``LPOP``), or None."""
        with self._client.errors("read"):
            value = self._raw.lpop(self._key + key)
        return None if value is None else str(value)
