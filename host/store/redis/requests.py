"""Approval requests in Redis: a hash per request, a key per binding, an index by time.

``<prefix>rq:<id>`` is a hash of ``v`` (the version) and ``b`` (:meth:`ApprovalRequest.to_json`),
expired by Redis; ``<prefix>rb:<binding>`` holds the id of the request that identical calls find;
``<prefix>rq`` is a sorted set of ids scored by creation time, for listing (it may hold ids whose
hash has gone, which readers skip). Opening and swapping are scripts, so two instances opening the
same binding make one request and a change is written only over the version it came from.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from host.store.redis.client import RedisClient, ms
from host.store.requests import ApprovalRequest

__all__ = ["RedisRequests"]

# KEYS: binding, the new request's hash, index. ARGV: id, body, ttl ms, created, the hash prefix.
_OPEN = """
local held = redis.call('GET', KEYS[1])
if held then
  local body = redis.call('HGET', ARGV[5] .. held, 'b')
  if body then return body end
end
redis.call('HSET', KEYS[2], 'v', 1, 'b', ARGV[2])
redis.call('PEXPIRE', KEYS[2], ARGV[3])
redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[3])
redis.call('ZADD', KEYS[3], ARGV[4], ARGV[1])
return false
"""

# KEYS: the request's hash. ARGV: the version it replaces, the new version, body, ttl ms.
_SWAP = """
if redis.call('HGET', KEYS[1], 'v') ~= ARGV[1] then return 0 end
redis.call('HSET', KEYS[1], 'v', ARGV[2], 'b', ARGV[3])
redis.call('PEXPIRE', KEYS[1], ARGV[4])
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
        register: Callable[[str], Any] = client.raw.register_script
        self._open = register(_OPEN)
        self._swap = register(_SWAP)
        self._release = register(_RELEASE)

    def open(self, request: ApprovalRequest, ttl_s: float) -> ApprovalRequest:
        """Keep ``request`` unless a live request holds its binding; the one that holds it."""
        keys = [self._binding + request.binding, self._key + request.id, self._index]
        args = [request.id, request.to_json(), ms(ttl_s), request.created, self._key]
        with self._client.errors("open an approval request in"):
            found = self._open(keys=keys, args=args)
            self._raw.zremrangebyscore(self._index, "-inf", time.time() - ttl_s)
        return request if found is None else ApprovalRequest.from_json(str(found))

    def get(self, request_id: str) -> ApprovalRequest | None:
        """The live request with this id, or None."""
        with self._client.errors("read"):
            body = self._raw.hget(self._key + request_id, "b")
        return None if body is None else ApprovalRequest.from_json(str(body))

    def swap(self, new: ApprovalRequest, ttl_s: float) -> bool:
        """Write ``new`` over the stored version just before it; whether it did."""
        args = [new.version - 1, new.version, new.to_json(), ms(ttl_s)]
        with self._client.errors("change an approval request in"):
            return bool(self._swap(keys=[self._key + new.id], args=args))

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
