"""The pages' sessions in Redis: a key per session that Redis expires itself, and an index.

``<prefix>se:<key>`` holds the session (:meth:`PageSession.to_json`) with an expiry of exactly its
duration; ``<prefix>se`` is a sorted set of keys scored by expiry, for listing and revoking by
principal; it may hold keys whose session has gone, which readers skip.
"""

from __future__ import annotations

import time
from collections.abc import Sequence

from host.store.redis.client import RedisClient, ms
from host.store.sessions import PageSession

__all__ = ["RedisSessions"]

#: Index entries are dropped this long after they expire, never sooner (clocks differ).
_SLACK_S = 3600.0


class RedisSessions:
    """The sessions of one Redis store.

    Args:
        client: The store's client.
    """

    def __init__(self, client: RedisClient) -> None:
        self._client = client
        self._raw = client.raw
        self._index = client.prefix + "se"
        self._key = client.prefix + "se:"

    def open(self, session: PageSession, ttl_s: float) -> None:
        """Keep ``session`` for ``ttl_s`` seconds."""
        with self._client.errors("keep a session in"):
            pipe = self._raw.pipeline(transaction=True)
            pipe.set(self._key + session.key, session.to_json(), px=ms(ttl_s))
            pipe.zadd(self._index, {session.key: session.expires})
            pipe.zremrangebyscore(self._index, "-inf", time.time() - _SLACK_S)
            pipe.execute()

    def get(self, key: str) -> PageSession | None:
        """The live session under ``key``, or None."""
        with self._client.errors("read"):
            text = self._raw.get(self._key + key)
        return None if text is None else PageSession.from_json(key, text)

    def listed(self, principal: str | None) -> list[PageSession]:
        """The live sessions of ``principal`` (None: all), oldest first."""
        with self._client.errors("read"):
            keys = [str(k) for k in self._raw.zrange(self._index, 0, -1)]
            found: list[PageSession] = []
            for start in range(0, len(keys), 500):
                chunk = keys[start : start + 500]
                texts = self._raw.mget([self._key + k for k in chunk])
                for key, text in zip(chunk, texts, strict=True):
                    session = None if text is None else PageSession.from_json(key, text)
                    if session is not None and principal in (None, session.principal):
                        found.append(session)
        return sorted(found, key=lambda s: (s.created, s.key))

    def end(self, keys: Sequence[str]) -> int:
        """Delete the sessions under ``keys``; how many were live."""
        if not keys:
            return 0
        with self._client.errors("end sessions in"):
            pipe = self._raw.pipeline(transaction=True)
            pipe.delete(*(self._key + k for k in keys))
            pipe.zrem(self._index, *keys)
            deleted, _ = pipe.execute()
        return int(deleted)
