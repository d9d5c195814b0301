"""Approval requests in Redis: a hash per request, a key per binding, an index by time.

``<prefix>rq:<id>`` is a hash of ``v`` (the version) and ``b`` (:meth:`ApprovalRequest.to_json`),
expired by Redis; ``<prefix>rb:<binding>`` holds the id of the request that identical calls find;
``<prefix>rq`` is a sorted set of ids scored by creation time, for listing (it may hold ids whose
hash has gone, which readers skip); ``<prefix>ro:<caller>`` is a sorted set of the caller's open
requests scored by their expiry, which the opening script counts against the caller's limit.
Opening and swapping are scripts, so two instances opening the same binding make one request, a
change is written only over the version it came from, and no two calls pass a caller's limit.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from host.store.redis.client import RedisClient, ms
from host.store.requests import ApprovalRequest

__all__ = ["RedisRequests"]

# KEYS: binding, the new request's hash, index, the caller's open set. ARGV: id, body, ttl ms,
# created, the hash prefix, the most open (or ''), now, the request's expiry.
# Returns the holder's body, 0 when the caller has the most open already, or nil when kept.
_OPEN = """
local held = redis.call('GET', KEYS[1])
if held then
  local body = redis.call('HGET', ARGV[5] .. held, 'b')
  if body then return body end
end
if ARGV[6] ~= '' then
  redis.call('ZREMRANGEBYSCORE', KEYS[4], '-inf', ARGV[7])
  if redis.call('ZCARD', KEYS[4]) >= tonumber(ARGV[6]) then return 0 end
end
redis.call('HSET', KEYS[2], 'v', 1, 'b', ARGV[2])
redis.call('PEXPIRE', KEYS[2], ARGV[3])
redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[3])
redis.call('ZADD', KEYS[3], ARGV[4], ARGV[1])
redis.call('ZADD', KEYS[4], ARGV[8], ARGV[1])
redis.call('PEXPIRE', KEYS[4], ARGV[3])
return false
"""

# KEYS: the request's hash, the caller's open set. ARGV: the version it replaces, the new
# version, body, ttl ms, id, '1' when the request is no longer open.
_SWAP = """
if redis.call('HGET', KEYS[1], 'v') ~= ARGV[1] then return 0 end
redis.call('HSET', KEYS[1], 'v', ARGV[2], 'b', ARGV[3])
redis.call('PEXPIRE', KEYS[1], ARGV[4])
if ARGV[6] == '1' then redis.call('ZREM', KEYS[2], ARGV[5]) end
return 1
"""

# KEYS: binding. ARGV: id.
_RELEASE = """
if redis.call('GET', KEYS[1]) == ARGV[1] then redis.call('DEL', KEYS[1]) end
return 1
"""


class RedisRequests:
    """The approval requests of one Redis store.

    Args:
        client: The store's client.
    """

    def __init__(self, client: RedisClient) -> None:
        self._client = client
        self._raw = client.raw
        self._index = client.prefix + "rq"
        self._key = client.prefix + "rq:"
        self._binding = client.prefix + "rb:"
        self._open_of = client.prefix + "ro:"
        register: Callable[[str], Any] = client.raw.register_script
        self._open = register(_OPEN)
        self._swap = register(_SWAP)
        self._release = register(_RELEASE)

    def open(
        self, request: ApprovalRequest, ttl_s: float, most: int | None = None
    ) -> ApprovalRequest | None:
        """Keep ``request`` unless a live request holds its binding; the one that holds it.

        With ``most``: None when the caller has that many open already (counted in the same
        script, from the caller's set of open requests scored by their expiry).
        """
        keys = [self._binding + request.binding, self._key + request.id, self._index,
                self._open_of + request.caller]  # fmt: skip
        args = [request.id, request.to_json(), ms(ttl_s), request.created, self._key,
                "" if most is None else most, time.time(), request.expires]  # fmt: skip
        with self._client.errors("open an approval request in"):
            found = self._open(keys=keys, args=args)
            self._raw.zremrangebyscore(self._index, "-inf", time.time() - ttl_s)
        if found == 0:
            return None
        return request if found is None else ApprovalRequest.from_json(str(found))

    def get(self, request_id: str) -> ApprovalRequest | None:
        """The live request with this id, or None."""
        with self._client.errors("read"):
            body = self._raw.hget(self._key + request_id, "b")
        return None if body is None else ApprovalRequest.from_json(str(body))

    def swap(self, new: ApprovalRequest, ttl_s: float) -> bool:
        """Write ``new`` over the stored version just before it; whether it did."""
        closed = new.state != "pending" or new.told or new.voided
        args = [new.version - 1, new.version, new.to_json(), ms(ttl_s), new.id, int(closed)]
        keys = [self._key + new.id, self._open_of + new.caller]
        with self._client.errors("change an approval request in"):
            return bool(self._swap(keys=keys, args=args))

    def release(self, binding: str, request_id: str) -> None:
        """Free ``binding`` if the request ``request_id`` holds it."""
        with self._client.errors("write"):
            self._release(keys=[self._binding + binding], args=[request_id])

    def listed(self) -> list[ApprovalRequest]:
        """Every live request, newest first."""
        with self._client.errors("read"):
            ids = [str(i) for i in self._raw.zrevrange(self._index, 0, -1)]
            found: list[ApprovalRequest] = []
            for start in range(0, len(ids), 500):
                chunk = ids[start : start + 500]
                pipe = self._raw.pipeline(transaction=False)
                for request_id in chunk:
                    pipe.hget(self._key + request_id, "b")
                found.extend(ApprovalRequest.from_json(str(b)) for b in pipe.execute() if b)
        return found
