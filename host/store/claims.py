"""What a caller holds: an act claim (the right to run one act) and a lock, both lease-held.

The store hands them out (:meth:`host.store.Store.claim_act`, :meth:`host.store.Store.acquire_lock`)
and the lease keeper renews them until they end: a claim when it records its result, a lock when it
is released. Each carries a random owner token that the backend checks on every write, so a write
never touches what another claim or holder owns now.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from types import TracebackType

from host import ids
from host.errors import StoreError
from host.store.leases import LeaseKeeper

__all__ = ["ActClaim", "Lock", "new_token"]

log = logging.getLogger("host.store")

Record = Callable[[str, str, str, str, float], bool]
"""The backend's write of a result: ``(key, token, incident, value, ttl_s)``; False when another
claim holds the key now."""

MarkLost = Callable[[str, str, str, float], None]
"""The backend's mark of a claim that has no result: ``(key, token, reason, ttl_s)``."""

Release = Callable[[str, str], bool]
"""The backend's release of a lock: ``(name, token)``; False when the token no longer holds it."""


def new_token() -> str:
    """A claim's or lock's owner token: random, so no two ever share one."""
    return ids.random_bytes(12).hex()


class ActClaim:
    """The right to run one act, given to exactly one caller by :meth:`host.store.Store.claim_act`.

    Args:
        key: The act.
        incident: Its incident id.
        token: The claim's owner token.
        ttl_s: How long the act's record lives once its result is recorded.
        record: The backend's write of the result.
        mark_lost: The backend's mark of a claim whose result could not be written.
        keeper: The lease keeper renewing this claim until it records.
    """

    def __init__(
        self,
        key: str,
        incident: str,
        token: str,
        ttl_s: float,
        record: Record,
        mark_lost: MarkLost,
        keeper: LeaseKeeper,
    ) -> None:
        self.key = key
        self.incident = incident
        self.token = token
        self._ttl_s = ttl_s
        self._write = record
        self._mark_lost = mark_lost
        self._keeper = keeper
        self._recorded = False
        self._lock = threading.Lock()

    def __repr__(self) -> str:
        return f"<act claim {self.key!r} incident={self.incident!r}>"

    def record(self, value: str) -> None:
        """Record the act's result, so every later caller gets it as ``done``.

        Either way the claim stops being renewed. If the result cannot be written, the claim is
        marked ``lost`` (with the error as its reason) if the store still takes that, and reads
        ``lost`` once its lease lapses otherwise; it is never handed to anyone else.

        Raises:
            host.errors.StoreError: The result could not be written.
            RuntimeError: The claim recorded a result already.
        """
        if not isinstance(value, str):
            raise TypeError(f"an act's result must be str, got {type(value).__name__}")
        with self._lock:
            if self._recorded:
                raise RuntimeError(f"the act {self.key!r} recorded its result already")
            self._recorded = True
        try:
            if not self._write(self.key, self.token, self.incident, value, self._ttl_s):
                raise StoreError(
                    f"the claim on act {self.key!r} expired and was taken again before its "
                    f"result was recorded; ttl_s={self._ttl_s:g} is shorter than the act ran"
                )
        except StoreError as exc:
            self._lost(f"the act ran but its result could not be recorded: {exc}")
            raise
        finally:
            # NOTE: after the write, not before: while a slow write waits for the store, the
            # claim must not lapse and read as lost when its result is about to be there.
            self._keeper.drop(self.token)

    def _lost(self, reason: str) -> None:
        try:
            self._mark_lost(self.key, self.token, reason, self._ttl_s)
        except StoreError as again:
            log.debug("could not mark the act %r lost either: %s", self.key, again)
        log.error(
            "act %r (incident %s): %s", self.key, self.incident, reason, extra={"act": self.key}
        )


class Lock:
    """A lock held by this process until released, given by :meth:`host.store.Store.acquire_lock`.

    Its lease is renewed like an act claim's, so a holder that dies frees it within a lease. Use it
    as a context manager, or call :meth:`release` when the act that took it ends.

    Args:
        name: The lock's name.
        token: The holder's owner token.
        release: The backend's release.
        keeper: The lease keeper renewing the lock until it is released.
    """

    def __init__(self, name: str, token: str, release: Release, keeper: LeaseKeeper) -> None:
        self.name = name
        self.token = token
        self._release = release
        self._keeper = keeper
        self._released = False

    def __repr__(self) -> str:
        return f"<lock {self.name!r}>"

    def __enter__(self) -> Lock:
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        trace: TracebackType | None,
    ) -> None:
        self.release()

    def release(self) -> bool:
        """Free the lock for the next caller; a second call does nothing.

        Returns:
            True if this holder still held it; False if it had lapsed (this process stalled past
            its lease) or was released already.

        Raises:
            host.errors.StoreError: The store failed; the lock then comes free once its lease
                lapses, since it is no longer renewed.
        """
        if self._released:
            return False
        self._released = True
        try:
            return self._release(self.name, self.token)
        finally:
            self._keeper.drop(self.token)
