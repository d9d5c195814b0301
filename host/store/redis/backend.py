"""The Redis backend: the store in Redis (6 or newer), for host instances on several machines.

Records live under ``<prefix>v:<key>``, act claims under ``<prefix>a:<key>`` and ``<prefix>l:<key>``
and locks under ``<prefix>lk:<name>`` (:mod:`host.store.redis.acts`), queues under
``<prefix>q:<key>`` (:mod:`host.store.redis.queues`), approvals under ``<prefix>ap``
(:mod:`host.store.redis.approvals`), audit records under ``<prefix>au:``
(:mod:`host.store.redis.audit`) and approval requests under ``<prefix>rq`` and ``<prefix>rb:``
(:mod:`host.store.redis.requests`), places under ``<prefix>pl:``
(:mod:`host.store.redis.places`), the pages' sessions under ``<prefix>se``
(:mod:`host.store.redis.sessions`). Token checks that must be atomic are small Lua scripts.
"""

from __future__ import annotations

import os
import time

from host.errors import StoreError
from host.store.redis.acts import RedisActs
from host.store.redis.approvals import RedisApprovals
from host.store.redis.audit import RedisAudit
from host.store.redis.client import RedisClient
from host.store.redis.places import RedisPlaces
from host.store.redis.queues import RedisQueues
from host.store.redis.records import RedisRecords
from host.store.redis.requests import RedisRequests
from host.store.redis.risks import redis_risks, unchecked_redis
from host.store.redis.sessions import RedisSessions
from host.store.values import Risk

__all__ = ["RedisBackend"]

# What durability() reads; CONFIG GET takes one pattern per call before Redis 7.
_PERSISTENCE = ("appendonly", "appendfsync", "save", "maxmemory", "maxmemory-policy")


class RedisBackend:
    """A store's records in one Redis database.

    Args:
        url: ``redis://[user:password@]host:port/db`` or ``rediss://...`` for TLS; redis-py's
            query options (``socket_timeout=...``) pass through.
        prefix: Put before every key, so several deployments can share one Redis.
        recheck_s: How often the watcher looks for values whose push notification was lost.

    Raises:
        host.errors.StoreError: redis-py is not installed, or the server cannot be reached.
    """

    file = None
    """Not a store in one file."""

    def __init__(
        self, url: str, *, prefix: str = "host:", recheck_s: float = 2.0, connect: bool = True
    ) -> None:
        self.client = RedisClient(url, prefix, connect=connect)
        self.audit = RedisAudit(self.client)
        self.acts = RedisActs(self.client, self.audit)
        self.records = RedisRecords(self.client)
        self.queues = RedisQueues(self.client, recheck_s)
        self.approvals = RedisApprovals(self.client)
        self.requests = RedisRequests(self.client)
        self.places = RedisPlaces(self.client)
        self.sessions = RedisSessions(self.client)

    def __repr__(self) -> str:
        return f"RedisBackend({self.client.url!r})"

    def health(self) -> str | None:
        """None if Redis answers and takes a write; else one line why not."""
        try:
            with self.client.errors("write to"):
                self.client.raw.set(
                    self.client.prefix + "health", f"{os.getpid()} {time.time()}", px=60_000
                )
        except StoreError as exc:
            return exc.message
        return None

    def durability(self) -> list[Risk]:
        """How this Redis can lose claims, from its configuration (see :mod:`.risks`).

        Raises:
            host.errors.StoreError: Redis cannot be reached.
        """
        client = self.client
        config: dict[str, str] = {}
        with client.errors("read the configuration of"):
            try:
                for name in _PERSISTENCE:
                    config.update(client.raw.config_get(name))
            except client.refused as exc:
                return [unchecked_redis(client.url, f"CONFIG GET is refused: {exc}")]
            try:
                info = dict(client.raw.info("persistence"))
            except client.refused:
                info = {}
        return redis_risks(client.url, config, info)

    def close(self) -> None:
        """Stop the watcher and close the client's connections."""
        self.queues.watcher.stop()
        self.client.close()
