"""Act claims and locks in Redis: a hash per act, and beside it a lease key only its owner renews.

``<prefix>a:<key>`` is a hash: ``owner`` (the claim's token), ``incident``, ``ttl`` (ms), and
``value`` once done or ``lost`` (a reason) once its owner gave up on recording. ``<prefix>l:<key>``
holds the owner's token with an expiry of one lease, kept by Redis's own clock, so machines with
skewed clocks agree. An act reads ``running`` while the lease key holds its owner's token, ``done``
with a value, and ``lost`` otherwise. Each step is one Lua script, so it is atomic.

A lock ``<prefix>lk:<name>`` holds its holder's token with an expiry of one lease: taken with
``SET NX``, renewed and released by scripts that check the token, so a holder whose lease lapsed
(the key expired, perhaps taken again) never renews or frees what is no longer its own.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from host.store.chain import prepare
from host.store.records import STARTED
from host.store.redis.audit import APPEND_FUNCTIONS, RedisAudit
from host.store.redis.client import RedisClient, ms
from host.store.roles import Started
from host.store.values import LAPSED, ActState

__all__ = ["RedisActs", "to_state"]

# KEYS[1] the act hash, KEYS[2] its lease key.
_STATE = """
local function state()
  local found = redis.call('hmget', KEYS[1], 'owner', 'incident', 'value', 'lost')
  if not found[1] then return nil end
  local alive = 0
  if redis.call('get', KEYS[2]) == found[1] then alive = 1 end
  return {found[2], found[3], found[4], alive}
end
"""

# ARGV: token, incident, ttl_ms, lease_ms. {1} when claimed, else {0, state...}.
# With KEYS[3..] and ARGV[5..] (the audit chain's), the claim appends that record too; {2} when
# the chain's head moved since the record was linked.
_CLAIM = (
    _STATE
    + APPEND_FUNCTIONS
    + """
local found = state()
if found then return {0, found[1], found[2], found[3], found[4]} end
if #KEYS > 2 and not chain_ok(3, 5) then return {2} end
redis.call('hset', KEYS[1], 'owner', ARGV[1], 'incident', ARGV[2], 'ttl', ARGV[3])
redis.call('pexpire', KEYS[1], math.max(tonumber(ARGV[3]), tonumber(ARGV[4])))
redis.call('set', KEYS[2], ARGV[1], 'PX', ARGV[4])
if #KEYS > 2 then append_chain(3, 5) end
return {1}
"""
)

_READ = _STATE + "return state()\n"

# ARGV: token, incident, value, ttl_ms. 0 when another claim holds the key now.
_RECORD = """
local owner = redis.call('hget', KEYS[1], 'owner')
if owner and owner ~= ARGV[1] then return 0 end
redis.call('hset', KEYS[1], 'owner', ARGV[1], 'incident', ARGV[2], 'value', ARGV[3], 'ttl', ARGV[4])
redis.call('hdel', KEYS[1], 'lost')
redis.call('pexpire', KEYS[1], ARGV[4])
if redis.call('get', KEYS[2]) == ARGV[1] then redis.call('del', KEYS[2]) end
return 1
"""

# ARGV: token, reason, ttl_ms.
_MARK_LOST = """
local ours = redis.call('hget', KEYS[1], 'owner') == ARGV[1]
if ours and redis.call('hexists', KEYS[1], 'value') == 0 then
  redis.call('hset', KEYS[1], 'lost', ARGV[2])
  if redis.call('pttl', KEYS[1]) < tonumber(ARGV[3]) then
    redis.call('pexpire', KEYS[1], ARGV[3])
  end
end
if redis.call('get', KEYS[2]) == ARGV[1] then redis.call('del', KEYS[2]) end
return 1
"""

# KEYS: act 1, lease 1, act 2, lease 2, ...; ARGV: lease_ms, token 1, token 2, ...
# A lapsed lease of an unrecorded claim is renewed too: its owner was only slow, and is alive.
_RENEW = """
local renewed = 0
for i = 1, #KEYS, 2 do
  local token = ARGV[(i + 1) / 2 + 1]
  local found = redis.call('hmget', KEYS[i], 'owner', 'value', 'lost', 'ttl')
  if found[1] == token and not found[2] and not found[3] then
    redis.call('set', KEYS[i + 1], token, 'PX', ARGV[1])
    redis.call('pexpire', KEYS[i], math.max(tonumber(found[4]), tonumber(ARGV[1])))
    renewed = renewed + 1
  end
end
return renewed
"""

# KEYS[1] the lock; ARGV: token. 1 when released.
_RELEASE_LOCK = """
if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('del', KEYS[1]) end
return 0
"""

# KEYS: lock 1, lock 2, ...; ARGV: lease_ms, token 1, token 2, ...
_RENEW_LOCKS = """
for i = 1, #KEYS do
  if redis.call('get', KEYS[i]) == ARGV[i + 1] then redis.call('pexpire', KEYS[i], ARGV[1]) end
end
return 1
"""

_CHUNK = 500  # claims per renewal script: bounds how long one script blocks the server


def to_state(reply: list[Any] | None) -> ActState | None:
    """The act's state from the ``state()`` part of a script's reply."""
    if not reply:
        return None
    incident, value, lost, alive = reply
    if value is not None:
        return ActState("done", str(value), str(incident))
    if lost is not None:
        return ActState("lost", None, str(incident), str(lost))
    if not alive:
        return ActState("lost", None, str(incident), LAPSED)
    return ActState("running", None, str(incident))


class RedisActs:
    """The act claims and locks of one Redis store, each step one script.

    Args:
        client: The store's client.
        audit: The store's audit records, whose record of a lost act a claim writes.
    """

    def __init__(self, client: RedisClient, audit: RedisAudit) -> None:
        self._client = client
        self._audit = audit
        self._prefix = client.prefix
        register: Callable[[str], Any] = client.raw.register_script
        self._claim = register(_CLAIM)
        self._read = register(_READ)
        self._record = register(_RECORD)
        self._mark_lost = register(_MARK_LOST)
        self._renew = register(_RENEW)
        self._release_lock = register(_RELEASE_LOCK)
        self._renew_locks = register(_RENEW_LOCKS)

    def keys(self, key: str) -> list[str]:
        """The act hash and lease key of the act ``key``."""
        return [self._prefix + "a:" + key, self._prefix + "l:" + key]

    def claim(
        self,
        key: str,
        token: str,
        incident: str,
        ttl_s: float,
        lease_s: float,
        started: Started | None = None,
    ) -> ActState | None:
        """Claim ``key`` for ``token`` (None), or the state of whoever has it.

        ``started``'s record is written by the same script, if the claim is taken.
        """
        keys, args = self.keys(key), [token, incident, ms(ttl_s), ms(lease_s)]

        def run(keys: list[str], args: list[Any]) -> list[Any] | None:
            reply = list(self._claim(keys=keys, args=args))
            return None if reply[0] == 2 else reply

        with self._client.errors("claim an act in"):
            if started is None:
                reply = list(self._claim(keys=keys, args=args))
            else:
                entry = [prepare(started[0], STARTED)]
                reply = self._audit.appending(entry, keys, args, run)[0]
        if reply[0] == 1:
            return None
        found = to_state(list(reply[1:]))
        assert found is not None  # the script saw the hash
        return found

    def state(self, key: str) -> ActState | None:
        """The act's state, or None if it was never claimed (or expired)."""
        with self._client.errors("read"):
            return to_state(self._read(keys=self.keys(key)))

    def record(self, key: str, token: str, incident: str, value: str, ttl_s: float) -> bool:
        """Record ``value`` for the claim ``token``; False if another claim holds the key now."""
        with self._client.errors("record an act's result in"):
            return bool(self._record(keys=self.keys(key), args=[token, incident, value, ms(ttl_s)]))

    def mark_lost(self, key: str, token: str, reason: str, ttl_s: float) -> None:
        """Say why the claim ``token`` has no result, unless it has one."""
        with self._client.errors("mark an act lost in"):
            self._mark_lost(keys=self.keys(key), args=[token, reason, ms(ttl_s)])

    def renew(self, claims: list[tuple[str, str]], lease_s: float) -> None:
        """Extend the leases of the live claims among ``(token, key)`` pairs."""
        with self._client.errors("renew act claims in"):
            for start in range(0, len(claims), _CHUNK):
                chunk = claims[start : start + _CHUNK]
                keys = [name for _, key in chunk for name in self.keys(key)]
                self._renew(keys=keys, args=[ms(lease_s), *(token for token, _ in chunk)])

    def take_lock(self, name: str, token: str, lease_s: float) -> bool:
        """Hold the lock ``name`` with ``token`` if nobody holds it (its key is gone)."""
        with self._client.errors("take a lock in"):
            return bool(
                self._client.raw.set(self._prefix + "lk:" + name, token, nx=True, px=ms(lease_s))
            )

    def release_lock(self, name: str, token: str) -> bool:
        """Free the lock ``name`` if ``token`` holds it; False if its lease had lapsed."""
        with self._client.errors("release a lock in"):
            return bool(self._release_lock(keys=[self._prefix + "lk:" + name], args=[token]))

    def renew_locks(self, locks: list[tuple[str, str]], lease_s: float) -> None:
        """Extend the leases of the locks among ``(token, name)`` pairs that their tokens hold."""
        with self._client.errors("renew locks in"):
            for start in range(0, len(locks), _CHUNK):
                chunk = locks[start : start + _CHUNK]
                keys = [self._prefix + "lk:" + name for _, name in chunk]
                self._renew_locks(keys=keys, args=[ms(lease_s), *(token for token, _ in chunk)])
