"""The shared store in Redis, for host instances on several machines.

Records live under ``<prefix>v:<key>``. Act claims (:mod:`host.store.redis_acts`) live under
``<prefix>a:<key>`` and ``<prefix>l:<key>``, approvals under ``<prefix>ap``
(:mod:`host.store.redis_approvals`), audit records under ``<prefix>au:``
(:mod:`host.store.redis_audit`), and queues under ``<prefix>q:<key>`` (``RPUSH``/``LPOP`` with
the key's expiry; each push is announced on ``<prefix>pushed`` for :mod:`host.store.redis_watch`,
so a waiting ``pop`` holds no connection of its own). Token checks that must be atomic are small
Lua scripts. redis-py is imported only here, so it stays an optional dependency
(``pip install 'host[redis]'``).
"""

from __future__ import annotations

import logging
import os
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any
from urllib.parse import urlsplit, urlunsplit

from host.errors import StoreError
from host.store.acts import HeldClaim, check_claim, new_token, wait_until_settled
from host.store.base import DEFAULT_LEASE_S, ActClaim, ActState, Risk, check_ttl
from host.store.durability import redis_risks, unchecked_redis
from host.store.leases import LeaseKeeper
from host.store.records import (
    Approval,
    AuditRecord,
    check_filters,
    check_limit,
    check_revoke,
)
from host.store.redis_acts import Scripts, ms
from host.store.redis_approvals import RedisApprovals
from host.store.redis_audit import RedisAudit
from host.store.redis_watch import RedisWatcher
from host.store.waiting import pop_waiting

__all__ = ["RedisStore", "redact"]

log = logging.getLogger("host.store")

_CONNECTIONS = 50  # per process: callers beyond this many at once wait for a free connection

# What durability() reads; CONFIG GET takes one pattern per call before Redis 7.
_PERSISTENCE = ("appendonly", "appendfsync", "save", "maxmemory", "maxmemory-policy")


def redact(url: str) -> str:
    """The URL with any password replaced by ``***``, fit for messages and logs."""
    parts = urlsplit(url)
    if parts.password is None:
        return url
    host = parts.hostname or ""
    if ":" in host:
        host = f"[{host}]"
    if parts.port is not None:
        host = f"{host}:{parts.port}"
    user = parts.username or ""
    return urlunsplit(parts._replace(netloc=f"{user}:***@{host}"))


class RedisStore:
    """A :class:`host.store.base.Store` in Redis (6 or newer).

    Args:
        url: ``redis://[user:password@]host:port/db`` or ``rediss://...`` for TLS; redis-py's
            query options (``socket_timeout=...``) pass through.
        prefix: Put before every key, so several deployments can share one Redis.
        lease_s: How long an act claim lasts without renewal (see
            :data:`host.store.base.DEFAULT_LEASE_S`).
        recheck_s: How often the watcher looks for values whose push notification was lost.

    Raises:
        host.errors.StoreError: redis-py is not installed, or the server cannot be reached.
    """

    def __init__(
        self,
        url: str,
        *,
        prefix: str = "host:",
        lease_s: float = DEFAULT_LEASE_S,
        recheck_s: float = 2.0,
    ) -> None:
        check_ttl(lease_s, "lease_s")
        try:
            import redis
        except ImportError as exc:
            raise StoreError(
                f"the Redis store ({redact(url)}) needs redis-py: pip install 'host[redis]'"
            ) from exc
        self._url = redact(url)
        self._error: type[Exception] = redis.RedisError
        self._refused: type[Exception] = redis.ResponseError
        self._prefix = prefix
        self.lease_s = lease_s
        self._closed = False
        # NOTE: redis-py's pool notices a fork and opens fresh connections in the child. It is
        # bounded (callers wait for a free connection) since waiting pops hold none of their own:
        # a thousand waiters woken at once share a few dozen connections.
        with self._errors("connect to"):
            pool = redis.BlockingConnectionPool.from_url(
                url,
                decode_responses=True,
                socket_connect_timeout=5.0,
                max_connections=_CONNECTIONS,
                timeout=20,
            )
            self._client: Any = redis.Redis(connection_pool=pool)
            self._client.ping()
        self._acts = Scripts(self._client, prefix)
        self._approvals = RedisApprovals(self._client, prefix)
        self._audit = RedisAudit(self._client, prefix)
        self._keeper = LeaseKeeper(self._renew, lease_s, self._url)
        self._watcher = RedisWatcher(self._client, prefix, recheck_s, self._error, self._url)

    def __repr__(self) -> str:
        return f"RedisStore({self._url!r})"

    # -- act claims ------------------------------------------------------------------------------

    def claim_act(self, key: str, *, ttl_s: float, incident: str) -> ActClaim | ActState:
        """Claim an act or say what became of it; see :meth:`host.store.base.Store.claim_act`."""
        check_claim(key, ttl_s, incident)
        token = new_token()
        with self._errors("claim an act in"):
            found = self._acts.claim(key, token, incident, ttl_s, self.lease_s)
        if found is not None:
            return found
        self._keeper.hold(token, key)

        def write(value: str) -> None:
            with self._errors("record an act's result in"):
                kept = self._acts.record(key, token, incident, value, ttl_s)
            if not kept:
                raise StoreError(
                    f"the claim on act {key!r} expired and was taken again before its "
                    f"result was recorded; ttl_s={ttl_s:g} is shorter than the act ran"
                )

        def mark_lost(reason: str) -> None:
            with self._errors("mark an act lost in"):
                self._acts.mark_lost(key, token, reason, ttl_s)

        return HeldClaim(key, incident, token, write, mark_lost, self._keeper)

    def act_state(self, key: str) -> ActState | None:
        """What became of an act; see :meth:`host.store.base.Store.act_state`."""
        with self._errors("read"):
            return self._acts.state(key)

    def wait_act(self, key: str, timeout_s: float) -> ActState | None:
        """Wait for an act to end; see :meth:`host.store.base.Store.wait_act`."""
        return wait_until_settled(lambda: self.act_state(key), timeout_s)

    def _renew(self, claims: list[tuple[str, str]]) -> None:
        with self._errors("renew act claims in"):
            self._acts.renew(claims, self.lease_s)

    # -- records ---------------------------------------------------------------------------------

    def add(self, key: str, value: str, ttl_s: float) -> bool:
        """Insert if absent; see :meth:`host.store.base.Store.add`."""
        check_ttl(ttl_s)
        with self._errors("write"):
            return bool(self._client.set(self._prefix + "v:" + key, value, nx=True, px=ms(ttl_s)))

    def get(self, key: str) -> str | None:
        """The live value for ``key``; see :meth:`host.store.base.Store.get`."""
        with self._errors("read"):
            value = self._client.get(self._prefix + "v:" + key)
        return None if value is None else str(value)

    def put(self, key: str, value: str, ttl_s: float) -> None:
        """Insert or overwrite; see :meth:`host.store.base.Store.put`."""
        check_ttl(ttl_s)
        with self._errors("write"):
            self._client.set(self._prefix + "v:" + key, value, px=ms(ttl_s))

    def delete(self, key: str) -> None:
        """Remove the record and any claim; see :meth:`host.store.base.Store.delete`."""
        with self._errors("write"):
            self._client.delete(self._prefix + "v:" + key)

    # -- queues ----------------------------------------------------------------------------------

    def push(self, key: str, value: str, ttl_s: float) -> None:
        """Append to a queue and announce it; see :meth:`host.store.base.Store.push`."""
        check_ttl(ttl_s)
        queue_key = self._prefix + "q:" + key
        with self._errors("write"):
            pipe = self._client.pipeline(transaction=True)
            pipe.rpush(queue_key, value)
            pipe.pexpire(queue_key, ms(ttl_s))
            pipe.publish(self._watcher.channel, key)
            pipe.execute()

    def pop(self, key: str, timeout_s: float) -> str | None:
        """Take the oldest value, woken by the watcher; see :meth:`host.store.base.Store.pop`."""
        return pop_waiting(self._watcher, key, timeout_s, self._take)

    def _take(self, key: str) -> str | None:
        with self._errors("read"):
            value = self._client.lpop(self._prefix + "q:" + key)
        return None if value is None else str(value)

    # -- approvals and audit records -------------------------------------------------------------

    def grant_approval(
        self, principal: str, tool: str, question: str, key: str, ttl_s: float
    ) -> Approval:
        """Remember a yes; see :meth:`host.store.base.Store.grant_approval`."""
        approval = Approval.new(principal, tool, question, key, ttl_s)
        with self._errors("remember an approval in"):
            self._approvals.grant(approval, ttl_s)
        return approval

    def find_approval(self, approval: str) -> Approval | None:
        """A live approval by id; see :meth:`host.store.base.Store.find_approval`."""
        with self._errors("read"):
            return self._approvals.find(approval)

    def approvals(self, *, principal: str | None = None, tool: str | None = None) -> list[Approval]:
        """Live approvals; see :meth:`host.store.base.Store.approvals`."""
        check_filters(principal=principal, tool=tool)
        with self._errors("read"):
            return self._approvals.listed(principal, tool)

    def revoke_approvals(
        self,
        *,
        approval: str | None = None,
        principal: str | None = None,
        tool: str | None = None,
    ) -> int:
        """Forget approvals; see :meth:`host.store.base.Store.revoke_approvals`."""
        check_revoke(approval, principal, tool)
        with self._errors("revoke approvals in"):
            return self._approvals.revoke(approval, principal, tool)

    def write_audit(self, record: AuditRecord, *, rank: int, keep_s: float) -> bool:
        """Write a call's record; see :meth:`host.store.base.Store.write_audit`."""
        check_ttl(keep_s, "keep_s")
        with self._errors("write an audit record to"):
            return self._audit.write(record, rank, keep_s)

    def write_audits(self, records: Sequence[tuple[AuditRecord, int]], *, keep_s: float) -> None:
        """Write many calls' records in one round trip; see :meth:`Store.write_audits`."""
        check_ttl(keep_s, "keep_s")
        if not records:
            return
        with self._errors("write audit records to"):
            self._audit.write_many(records, keep_s)

    def audit_records(
        self,
        *,
        tool: str | None = None,
        principal: str | None = None,
        since: float | None = None,
        limit: int = 100,
    ) -> list[AuditRecord]:
        """Read records, newest first; see :meth:`host.store.base.Store.audit_records`."""
        check_filters(tool=tool, principal=principal)
        check_limit(limit)
        with self._errors("read"):
            return self._audit.query(tool, principal, since, limit)

    def prune_audit(self, before: float) -> int:
        """Delete old records; see :meth:`host.store.base.Store.prune_audit`."""
        with self._errors("prune the audit records of"):
            return self._audit.prune(before)

    # -- the store as a whole --------------------------------------------------------------------

    def health(self) -> str | None:
        """None if Redis answers and takes a write; see :meth:`host.store.base.Store.health`."""
        try:
            with self._errors("write to"):
                self._client.set(self._prefix + "health", f"{os.getpid()} {time.time()}", px=60_000)
        except StoreError as exc:
            return exc.message
        return None

    def durability(self) -> list[Risk]:
        """How this Redis can lose claims, from its configuration; see :mod:`host.store.durability`.

        Raises:
            host.errors.StoreError: Redis cannot be reached.
        """
        config: dict[str, str] = {}
        with self._errors("read the configuration of"):
            try:
                for name in _PERSISTENCE:
                    config.update(self._client.config_get(name))
            except self._refused as exc:
                return [unchecked_redis(self._url, f"CONFIG GET is refused: {exc}")]
            try:
                info = dict(self._client.info("persistence"))
            except self._refused:
                info = {}
        return redis_risks(self._url, config, info)

    def close(self) -> None:
        """Stop the background threads and close the client's connections."""
        self._closed = True
        self._keeper.stop()
        self._watcher.stop()
        try:
            self._client.close()
            self._client.connection_pool.disconnect()
        except self._error as exc:  # pragma: no cover - closing a dead connection
            log.debug("closing %s: %s", self._url, exc)

    # -- helpers ---------------------------------------------------------------------------------

    @contextmanager
    def _errors(self, doing: str) -> Iterator[None]:
        """Turn redis-py's exceptions into StoreError naming the server (without its password)."""
        if self._closed:
            raise StoreError(f"the Redis store {self._url} is closed")
        try:
            yield
        except self._error as exc:
            raise StoreError(f"could not {doing} the Redis store {self._url}: {exc}") from exc
