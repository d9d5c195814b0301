"""Places in Redis: a sorted set ``<prefix>pl:<group>`` per group, its members scored by expiry.

Taking a place is a script (drop the expired, count, add), so two instances counting the same
group at once never both fit under its limit. The set itself expires with its last member.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from host.store.redis.client import RedisClient

__all__ = ["RedisPlaces"]

# KEYS: the group's set. ARGV: member, now (ms), its expiry (ms), the most members (-1: no limit).
_TAKE = """
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', ARGV[2])
local most = tonumber(ARGV[4])
if most >= 0 and not redis.call('ZSCORE', KEYS[1], ARGV[1]) then
  if redis.call('ZCARD', KEYS[1]) >= most then
    return redis.call('ZRANGE', KEYS[1], 0, 0, 'WITHSCORES')[2]
  end
end
redis.call('ZADD', KEYS[1], ARGV[3], ARGV[1])
local last = redis.call('ZRANGE', KEYS[1], -1, -1, 'WITHSCORES')[2]
redis.call('PEXPIREAT', KEYS[1], last)
return false
"""


class RedisPlaces:
    """The places of one Redis store.

    Args:
        client: The store's client.
    """

    def __init__(self, client: RedisClient) -> None:
        self._client = client
        self._raw = client.raw
        self._key = client.prefix + "pl:"
        register: Callable[[str], Any] = client.raw.register_script
        self._take = register(_TAKE)

    def take(self, group: str, member: str, most: int | None, ttl_s: float) -> float | None:
        """Take a place with one script; the seconds until the oldest frees when full."""
        now = time.time()
        args = [member, int(now * 1000), int((now + ttl_s) * 1000), -1 if most is None else most]
        with self._client.errors("take a place in"):
            oldest = self._take(keys=[self._key + group], args=args)
        return None if oldest is None else max(float(oldest) / 1000 - now, 0.0)

    def holds(self, group: str, member: str) -> bool:
        """Whether the group's set scores ``member`` later than now."""
        with self._client.errors("read"):
            score = self._raw.zscore(self._key + group, member)
        return score is not None and float(score) > time.time() * 1000

    def give(self, group: str, member: str) -> None:
        """Remove ``member`` from the group's set."""
        with self._client.errors("write"):
            self._raw.zrem(self._key + group, member)
