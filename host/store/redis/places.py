"""Places in Redis: a sorted set ``<prefix>pl:<group>`` per group, its members scored by expiry.

A member's score is when it was last renewed plus its TTL, so the lowest scores are the least
recently used. Taking a place is a script (drop the expired, evict the lowest past the limit,
add), so two instances taking places in one group at once never leave more than its limit, and
renewing one is a script that never brings back an evicted member. The set itself expires with
its last member.
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
local evicted = {}
if most >= 0 and not redis.call('ZSCORE', KEYS[1], ARGV[1]) then
  local over = redis.call('ZCARD', KEYS[1]) - most
  if over >= 0 then
    evicted = redis.call('ZRANGE', KEYS[1], 0, over)
    redis.call('ZREM', KEYS[1], unpack(evicted))
  end
end
redis.call('ZADD', KEYS[1], ARGV[3], ARGV[1])
local last = redis.call('ZRANGE', KEYS[1], -1, -1, 'WITHSCORES')[2]
redis.call('PEXPIREAT', KEYS[1], last)
return evicted
"""

# KEYS: the group's set. ARGV: member, now (ms), its new expiry (ms).
_RENEW = """
local score = redis.call('ZSCORE', KEYS[1], ARGV[1])
if not score or tonumber(score) <= tonumber(ARGV[2]) then
  return 0
end
redis.call('ZADD', KEYS[1], ARGV[3], ARGV[1])
local last = redis.call('ZRANGE', KEYS[1], -1, -1, 'WITHSCORES')[2]
redis.call('PEXPIREAT', KEYS[1], last)
return 1
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
        self._renew = register(_RENEW)

    def take(self, group: str, member: str, most: int | None, ttl_s: float) -> list[str]:
        """Take a place with one script; the members it evicted."""
        now = time.time()
        args = [member, int(now * 1000), int((now + ttl_s) * 1000), -1 if most is None else most]
        with self._client.errors("take a place in"):
            evicted = self._take(keys=[self._key + group], args=args)
        return [str(gone) for gone in evicted]

    def renew(self, group: str, member: str, ttl_s: float) -> bool:
        """Move a live member's score with one script; an evicted one stays gone."""
        now = time.time()
        args = [member, int(now * 1000), int((now + ttl_s) * 1000)]
        with self._client.errors("renew a place in"):
            return bool(self._renew(keys=[self._key + group], args=args))

    def holds(self, group: str, member: str) -> bool:
        """Whether the group's set scores ``member`` later than now."""
        with self._client.errors("read"):
            score = self._raw.zscore(self._key + group, member)
        return score is not None and float(score) > time.time() * 1000

    def give(self, group: str, member: str) -> None:
        """Remove ``member`` from the group's set."""
        with self._client.errors("write"):
            self._raw.zrem(self._key + group, member)
