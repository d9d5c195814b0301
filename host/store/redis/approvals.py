"""Remembered approvals in Redis: a key per approval that Redis expires itself, and an index.

``<prefix>ap:<id>`` holds the approval (:meth:`Approval.to_json`) with an expiry of exactly its
duration, kept by Redis's own clock, so no instance honours it a moment longer whatever its own
clock says. ``<prefix>ap`` is a sorted set of ids scored by expiry, for listing and revoking by
principal or tool; it may hold ids whose key has gone (expired or revoked), which readers skip.
"""

from __future__ import annotations

import time

from host.store.records import Approval
from host.store.redis.client import RedisClient, ms

__all__ = ["RedisApprovals"]

#: Index entries are dropped this long after they expire, never sooner: an instance whose clock
#: runs ahead must not drop a live approval from the index (revoking by principal would miss it).
_SLACK_S = 3600.0


class RedisApprovals:
    """The approvals of one Redis store.

    Args:
        client: The store's client.
    """

    def __init__(self, client: RedisClient) -> None:
        self._client = client
        self._raw = client.raw
        self._index = client.prefix + "ap"
        self._key = client.prefix + "ap:"

    def grant(self, approval: Approval, ttl_s: float) -> None:
        """Keep ``approval`` for ``ttl_s`` seconds, replacing the one with its id."""
        with self._client.errors("remember an approval in"):
            pipe = self._raw.pipeline(transaction=True)
            pipe.set(self._key + approval.id, approval.to_json(), px=ms(ttl_s))
            pipe.zadd(self._index, {approval.id: approval.expires})
            pipe.zremrangebyscore(self._index, "-inf", time.time() - _SLACK_S)
            pipe.execute()

    def find(self, approval: str) -> Approval | None:
        """The live approval with id ``approval``, or None."""
        with self._client.errors("read"):
            text = self._raw.get(self._key + approval)
        return None if text is None else Approval.from_json(approval, text)

    def listed(self, principal: str | None, tool: str | None) -> list[Approval]:
        """The live approvals of ``principal`` and ``tool`` (None: any), oldest first."""
        with self._client.errors("read"):
            return self._listed(principal, tool)

    def _listed(self, principal: str | None, tool: str | None) -> list[Approval]:
        ids = [str(i) for i in self._raw.zrange(self._index, 0, -1)]
        found: list[Approval] = []
        for start in range(0, len(ids), 500):
            chunk = ids[start : start + 500]
            texts = self._raw.mget([self._key + i for i in chunk])
            for approval, text in zip(chunk, texts, strict=True):
                if text is None:
                    continue
                item = Approval.from_json(approval, text)
                if principal not in (None, item.principal) or tool not in (None, item.tool):
                    continue
                found.append(item)
        return sorted(found, key=lambda a: (a.granted, a.id))

    def revoke(self, approval: str | None, principal: str | None, tool: str | None) -> int:
        """Delete the live approvals matching every filter given; how many there were."""
        with self._client.errors("revoke approvals in"):
            if approval is not None and principal is None and tool is None:
                ids = [approval]
            else:
                ids = [a.id for a in self._listed(principal, tool) if approval in (None, a.id)]
            if not ids:
                return 0
            pipe = self._raw.pipeline(transaction=True)
            pipe.delete(*(self._key + i for i in ids))
            pipe.zrem(self._index, *ids)
            deleted, _ = pipe.execute()
        return int(deleted)
