"""Audit records in Redis: the store's chain of entries, appended by one script at a time.

``<prefix>au:c:<seq>`` is a hash per entry (``body``, the entry's canonical JSON; ``hash``; and
its ``id``, ``kind``, ``rank``, ``at``, ``tool``, ``principal`` for pruning); ``<prefix>au:head``
holds the chain's newest ``seq`` and ``hash``, its ``first`` kept seq and its newest checkpoint
(``cpseq``, ``cpat``); ``<prefix>au:cp`` scores each checkpoint's seq by its time, for pruning.
A call's newest entry is ``<prefix>au:<id>`` (``rank``, ``seq``), and ``<prefix>au:all``,
``<prefix>au:tool:<tool>``, ``<prefix>au:who:<principal>`` index call ids by time
(``<prefix>au:ix`` names the per-tool and per-principal sets, so pruning finds them).

Redis's Lua has no SHA-256, so a writer links its entries in Python against the head it read
(with each call's rank), and the script appends them only if the head is still that one; if
another writer got there first (any audit write moves the head, so the ranks read are current
whenever the head is), the writer reads again and relinks. So every worker of every instance
appends to one gap-free chain, each append one atomic script (an act's claim's included).
"""

from __future__ import annotations

import json
import random
import time
from collections.abc import Callable, Sequence
from typing import Any

from host.errors import StoreError
from host.store.chain import Chain, Head, Link, Prepared, prepare
from host.store.records import STARTED, AuditRecord
from host.store.redis.client import RedisClient

__all__ = ["APPEND_FUNCTIONS", "KEYS_PER_LINK", "RedisAudit"]

#: How many times a writer relinks its entries after other writers moved the head.
_TRIES = 200

KEYS_PER_LINK = 6
_ARGS_PER_LINK = 9

# KEYS[k]: the head; per link, 6 keys: entry, call (or the checkpoint set), all, tool, who, ix.
# ARGV[a]: the head's hash as read ('' for none); ARGV[a + 1]: the links; per link, 9 values:
# seq, hash, body, rank, at, id, kind, tool, principal.
APPEND_FUNCTIONS = """
local function chain_ok(k, a)
  return (redis.call('hget', KEYS[k], 'hash') or '') == ARGV[a]
end
local function append_chain(k, a)
  local n = tonumber(ARGV[a + 1])
  for i = 0, n - 1 do
    local kk, aa = k + 1 + i * 6, a + 2 + i * 9
    local seq, at, id, kind = ARGV[aa], ARGV[aa + 4], ARGV[aa + 5], ARGV[aa + 6]
    redis.call('hset', KEYS[kk], 'body', ARGV[aa + 2], 'hash', ARGV[aa + 1], 'id', id,
               'kind', kind, 'rank', ARGV[aa + 3], 'at', at, 'tool', ARGV[aa + 7],
               'principal', ARGV[aa + 8])
    if kind == 'checkpoint' then
      redis.call('zadd', KEYS[kk + 1], at, seq)
      redis.call('hset', KEYS[k], 'cpseq', seq, 'cpat', at)
    else
      redis.call('hset', KEYS[kk + 1], 'rank', ARGV[aa + 3], 'seq', seq)
      redis.call('zadd', KEYS[kk + 2], at, id)
      redis.call('zadd', KEYS[kk + 3], at, id)
      redis.call('zadd', KEYS[kk + 4], at, id)
      redis.call('sadd', KEYS[kk + 5], KEYS[kk + 3], KEYS[kk + 4])
    end
    redis.call('hset', KEYS[k], 'seq', seq, 'hash', ARGV[aa + 1])
    redis.call('hsetnx', KEYS[k], 'first', seq)
  end
end
"""
"""Lua functions that check the head and append links: an act's claim's script uses them too."""

_APPEND = (
    APPEND_FUNCTIONS
    + """
if not chain_ok(1, 1) then return -1 end
append_chain(1, 1)
return 1
"""
)

_PAGE = 200


class RedisAudit:
    """The audit chain of one Redis store.

    Args:
        client: The store's client.
    """

    def __init__(self, client: RedisClient) -> None:
        self._client = client
        self._raw = client.raw
        self._prefix = client.prefix + "au:"
        self._all = self._prefix + "all"
        self._indexes = self._prefix + "ix"
        self._head = self._prefix + "head"
        self._checkpoints = self._prefix + "cp"
        self._append = client.raw.register_script(_APPEND)
        self.chain = Chain()

    def write(self, record: AuditRecord, rank: int, keep_s: float) -> bool:
        """Append ``record`` unless the call has one of equal or higher rank; whether it did."""
        return self._write([prepare(record, rank)])

    def started(self, record: AuditRecord, keep_s: float) -> None:
        """Append a first round's act's record (kind ``started``) before the act starts."""
        self.write(record, STARTED, keep_s)

    def write_many(self, records: Sequence[tuple[AuditRecord, int]], keep_s: float) -> None:
        """Append each record with its rank, in order, in one script."""
        self._write([prepare(record, rank) for record, rank in records])

    def _write(self, prepared: list[Prepared]) -> bool:
        def run(keys: list[str], args: list[Any]) -> int | None:
            reply = int(self._append(keys=keys, args=args))
            return None if reply == -1 else reply

        with self._client.errors("write audit records to"):
            return self.appending(prepared, [], [], run)[1]

    def appending(
        self,
        prepared: list[Prepared],
        keys: list[str],
        args: list[Any],
        run: Callable[[list[str], list[Any]], Any],
    ) -> tuple[Any, bool]:
        """Run a script that appends ``prepared`` after its own ``keys`` and ``args``.

        ``run`` gets the keys and arguments with the chain's after them, and returns None when
        the head moved (the links are made again and ``run`` called again), else its reply.
        Returns that reply, and whether anything was appended (not every record outranked).

        Raises:
            redis.RedisError: From ``run``.
            StoreError: Other writers kept moving the head for every try.
        """
        for attempt in range(_TRIES):
            expected, links = self._links(prepared)
            more_keys, more_args = self.script_input(expected, links)
            reply = run(keys + more_keys, args + more_args)
            if reply is not None:
                return reply, bool(links)
            if attempt > 2:
                time.sleep(random.uniform(0, 0.002 * min(attempt, 10)))
        raise StoreError("the audit chain kept moving: too many writers at once")

    def _links(self, prepared: list[Prepared]) -> tuple[str, list[Link]]:
        """The head's hash as read now, and the links that append what is not outranked."""
        calls = list(dict.fromkeys(p.record.id for p in prepared))
        pipe = self._raw.pipeline(transaction=False)
        pipe.hmget(self._head, "seq", "hash", "cpseq", "cpat")
        for call in calls:
            pipe.hget(self._prefix + call, "rank")
        found = pipe.execute()
        seq, hash_, cpseq, cpat = found[0]
        head = Head(
            int(seq or 0), hash_ or Head.hash, int(cpseq or 0), float(cpat) if cpat else None
        )
        ranks = {c: None if r is None else int(r) for c, r in zip(calls, found[1:], strict=True)}
        kept: list[Prepared] = []
        for p in prepared:
            current = ranks[p.record.id]
            if current is None or current < p.rank:
                ranks[p.record.id] = p.rank
                kept.append(p)
        links = self.chain.link(head, kept, time.time()) if kept else []
        return hash_ or "", links

    def script_input(self, expected: str, links: list[Link]) -> tuple[list[str], list[Any]]:
        """The keys and arguments of :data:`APPEND_FUNCTIONS` for ``links`` after ``expected``."""
        keys = [self._head]
        args: list[Any] = [expected, len(links)]
        for k in links:
            if k.kind == "checkpoint":
                keys += [self._entry(k.seq), self._checkpoints, self._all, self._all, self._all]
            else:
                keys += [
                    self._entry(k.seq),
                    self._prefix + k.id,
                    self._all,
                    self._prefix + "tool:" + k.tool,
                    self._prefix + "who:" + k.principal,
                ]
            keys.append(self._indexes)
            args += [k.seq, k.hash, k.body, k.rank, repr(k.at), k.id, k.kind, k.tool, k.principal]
        return keys, args

    def _entry(self, seq: int) -> str:
        return f"{self._prefix}c:{seq}"

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
            for record in self._newest(ids, now):
                if principal not in (None, record.principal):
                    continue  # another principal's
                found.append(record)
                if len(found) == limit:
                    break
        return found

    def _newest(self, ids: list[str], now: float) -> list[AuditRecord]:
        """The newest entry of each call in ``ids`` that readers see now."""
        pipe = self._raw.pipeline(transaction=False)
        for call in ids:
            pipe.hmget(self._prefix + call, "rank", "seq", "at", "principal", "tool", "body")
        views: list[tuple[str, str, str]] = []
        found: dict[str, AuditRecord] = {}
        for call, (rank, seq, at, who, tool, body) in zip(ids, pipe.execute(), strict=True):
            if seq is not None:
                views.append((call, rank, seq))
            elif body is not None:  # NOTE: a record written before the chain (v3), unchained
                found[call] = AuditRecord.from_body(call, float(at), who, tool, body)
        for _, _, seq in views:
            pipe.hmget(self._entry(int(seq)), "body", "hash", "at")
        for (call, rank, _), (body, hash_, at) in zip(views, pipe.execute(), strict=True):
            if body is None:
                continue  # pruned
            if int(rank) == STARTED and float(at) > now:
                continue  # a lost act's record, shown once its round could have ended
            found[call] = AuditRecord.from_entry(json.loads(body), hash_, float(at))
        return [found[call] for call in ids if call in found]

    def head_seq(self) -> int:
        """The seq of the chain's newest entry (0: none)."""
        with self._client.errors("read"):
            return int(self._raw.hget(self._head, "seq") or 0)

    def entries(self, after: int, limit: int) -> list[tuple[int, str, str]]:
        """Up to ``limit`` chain entries after seq ``after``, in order (missing ones skipped)."""
        with self._client.errors("read"):
            last, first = self._raw.hmget(self._head, "seq", "first")
            if last is None:
                return []
            start, end = max(after + 1, int(first or 1)), int(last)
            while start <= end:
                stop = min(start + limit, end + 1)
                pipe = self._raw.pipeline(transaction=False)
                for seq in range(start, stop):
                    pipe.hmget(self._entry(seq), "body", "hash")
                rows = [
                    (seq, body, hash_)
                    for seq, (body, hash_) in zip(range(start, stop), pipe.execute(), strict=True)
                    if body is not None
                ]
                if rows:
                    return rows
                start = stop  # NOTE: a page of deleted entries; the check names the gap
            return []

    def prune(self, before: float) -> int:
        """Delete the entries before the newest checkpoint older than ``before``; how many."""
        with self._client.errors("prune the audit records of"):
            return self._prune(before)

    def _prune(self, before: float) -> int:
        newest = self._raw.zrevrangebyscore(
            self._checkpoints, f"({before!r}", "-inf", start=0, num=1
        )
        first = self._raw.hget(self._head, "first")
        if not newest or first is None:
            return 0
        cut, deleted = int(newest[0]), 0
        for start in range(int(first), cut, 500):
            deleted += self._drop(range(start, min(start + 500, cut)))
        self._raw.hset(self._head, "first", cut)
        return deleted

    def _drop(self, seqs: range) -> int:
        """Delete the entries ``seqs``, and the calls whose newest entry one of them is."""
        pipe = self._raw.pipeline(transaction=False)
        for seq in seqs:
            pipe.hmget(self._entry(seq), "id", "kind", "tool", "principal")
        found = pipe.execute()
        for seq, (call, kind, tool, who) in zip(seqs, found, strict=True):
            if call is None:
                continue
            pipe.delete(self._entry(seq))
            if kind == "checkpoint":
                pipe.zrem(self._checkpoints, seq)
                continue
            view = self._prefix + call
            # NOTE: the call's index entries go only with its newest entry
            if self._raw.hget(view, "seq") == str(seq):
                pipe.delete(view)
                pipe.zrem(self._all, call)
                pipe.zrem(self._prefix + "tool:" + tool, call)
                pipe.zrem(self._prefix + "who:" + who, call)
        pipe.execute()
        return sum(1 for f in found if f[0] is not None)
