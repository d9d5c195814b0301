"""Audit records in Redis: a hash per call, and sorted sets that index them by time.

``<prefix>au:<id>`` is a hash (``rank``, ``at``, ``principal``, ``tool``, ``body``) that Redis
expires after the retention period. ``<prefix>au:all``, ``<prefix>au:tool:<tool>`` and
``<prefix>au:who:<principal>`` are sorted sets of call ids scored by ``at``; ``<prefix>au:ix``
names the per-tool and per-principal sets, so pruning finds them all. A write is one Lua script,
so the rank check (see :data:`host.store.records.ACTED`) and the indexes change atomically.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Any

from host.store.records import STARTED, AuditRecord
from host.store.redis.client import RedisClient, ms

__all__ = ["WRITE_FUNCTION", "RedisAudit"]

# KEYS[k..k+4]: record, all, tool index, principal index, index of indexes.
# ARGV[a..a+6]: rank, at, principal, tool, body, keep_ms, id. 1 when written.
WRITE_FUNCTION = """
local function write_audit(k, a)
  local rank = redis.call('hget', KEYS[k], 'rank')
  if rank and tonumber(rank) >= tonumber(ARGV[a]) then return 0 end
  redis.call('hset', KEYS[k], 'rank', ARGV[a], 'at', ARGV[a + 1], 'principal', ARGV[a + 2],
             'tool', ARGV[a + 3], 'body', ARGV[a + 4])
  redis.call('pexpire', KEYS[k], ARGV[a + 5])
  redis.call('zadd', KEYS[k + 1], ARGV[a + 1], ARGV[a + 6])
  redis.call('zadd', KEYS[k + 2], ARGV[a + 1], ARGV[a + 6])
  redis.call('zadd', KEYS[k + 3], ARGV[a + 1], ARGV[a + 6])
  redis.call('sadd', KEYS[k + 4], KEYS[k + 2], KEYS[k + 3])
  return 1
end
"""
"""A Lua function that writes one audit record, its keys and arguments from the offsets given:
other scripts (an act's claim) write a record in the same atomic step with it."""

_WRITE = WRITE_FUNCTION + "return write_audit(1, 1)\n"

_PAGE = 200
_FIELDS = ("at", "principal", "tool", "body", "rank")


class RedisAudit:
    """The audit records of one Redis store.

    Args:
        client: The store's client.
    """

    def __init__(self, client: RedisClient) -> None:
        self._client = client
        self._raw = client.raw
        self._prefix = client.prefix + "au:"
        self._all = self._prefix + "all"
        self._indexes = self._prefix + "ix"
        self._write = client.raw.register_script(_WRITE)

    def write(self, record: AuditRecord, rank: int, keep_s: float) -> bool:
        """Write ``record`` unless the call has one of equal or higher rank; whether it did."""
        keys, args = self.script_input(record, rank, keep_s)
        with self._client.errors("write an audit record to"):
            return bool(self._write(keys=keys, args=args))

    def started(self, record: AuditRecord, keep_s: float) -> None:
        """Write a first round's act's record (rank ``STARTED``) before the act starts."""
        self.write(record, STARTED, keep_s)

    def write_many(self, records: Sequence[tuple[AuditRecord, int]], keep_s: float) -> None:
        """:meth:`write` each record with its rank, in order, in one pipelined round trip."""
        with self._client.errors("write audit records to"):
            pipe = self._raw.pipeline(transaction=False)
            for record, rank in records:
                keys, args = self.script_input(record, rank, keep_s)
                self._write(keys=keys, args=args, client=pipe)
            pipe.execute()

    def script_input(
        self, record: AuditRecord, rank: int, keep_s: float
    ) -> tuple[list[str], list[Any]]:
        """The keys and arguments of :data:`WRITE_FUNCTION` for ``record`` at ``rank``."""
        keys = [
            self._prefix + record.id,
            self._all,
            self._prefix + "tool:" + record.tool,
            self._prefix + "who:" + record.principal,
            self._indexes,
        ]
        args = [
            rank,
            repr(record.time),
            record.principal,
            record.tool,
            record.body(),
            ms(keep_s),
            record.id,
        ]
        return keys, args

    def query(
        self, tool: str | None, principal: str | None, since: float | None, limit: int
    ) -> list[AuditRecord]:
        """The newest ``limit`` records matching every filter given, newest first."""
        with self._client.errors("read"):
            return self._query(tool, principal, since, limit)

    def _query(
        self, tool: str | None, principal: str | None, since: float | None, limit: int
    ) -> list[AuditRecord]:
        if tool is not None:
            index = self._prefix + "tool:" + tool
        elif principal is not None:
            index = self._prefix + "who:" + principal
        else:
            index = self._all
        low = "-inf" if since is None else repr(since)
        found: list[AuditRecord] = []
        offset, now = 0, time.time()
        while len(found) < limit:
            ids = self._raw.zrevrangebyscore(index, "+inf", low, start=offset, num=_PAGE)
            if not ids:
                break
            offset += len(ids)
            pipe = self._raw.pipeline(transaction=False)
            for call in ids:
                pipe.hmget(self._prefix + call, *_FIELDS)
            for call, (at, who, name, body, rank) in zip(ids, pipe.execute(), strict=True):
                if body is None or principal not in (None, who):
                    continue  # expired, or another principal's
                if int(rank) == STARTED and float(at) > now:
                    continue  # a lost act's record, shown once its round could have ended
                found.append(AuditRecord.from_body(call, float(at), who, name, body))
                if len(found) == limit:
                    break
        return found

    def prune(self, before: float) -> int:
        """Delete the records of calls that ended before ``before``; how many."""
        with self._client.errors("prune the audit records of"):
            return self._prune(before)

    def _prune(self, before: float) -> int:
        cutoff = f"({before!r}"
        ids = [str(i) for i in self._raw.zrangebyscore(self._all, "-inf", cutoff)]
        deleted = 0
        for start in range(0, len(ids), 500):
            chunk = ids[start : start + 500]
            deleted += int(self._raw.delete(*(self._prefix + i for i in chunk)))
        for index in [self._all, *self._raw.smembers(self._indexes)]:
            self._raw.zremrangebyscore(index, "-inf", cutoff)
            if index != self._all and not self._raw.exists(index):
                self._raw.srem(self._indexes, index)
        return deleted
