"""What both backends share about act claims: the claim object, and waiting for an act to end."""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable

from host import ids
from host.errors import StoreError
from host.store.base import ActState, backoff, check_ttl
from host.store.leases import LeaseKeeper

__all__ = ["HeldClaim", "check_claim", "new_token", "wait_until_settled"]

log = logging.getLogger("host.store")


def new_token() -> str:
    """A claim's owner token: random, so no two claims ever share one."""
    return ids.random_bytes(12).hex()


def check_claim(key: str, ttl_s: float, incident: str) -> None:
    """Reject arguments to ``claim_act`` that are programming errors.

    Raises:
        ValueError: ``ttl_s`` is not a positive number, or ``key`` or ``incident`` is empty.
    """
    check_ttl(ttl_s)
    if not key or not isinstance(key, str):
        raise ValueError(f"an act key must be a non-empty string, got {key!r}")
    if not incident or not isinstance(incident, str):
        raise ValueError(f"an incident id must be a non-empty string, got {incident!r}")


class HeldClaim:
    """An :class:`host.store.base.ActClaim`: the one caller's right to run the act ``key``.

    Args:
        key: The act.
        incident: Its incident id.
        token: The claim's owner token, which the backend checks on every write.
        write: Records the result (the backend's; raises StoreError).
        mark_lost: Marks the claim lost with a reason (the backend's; raises StoreError).
        keeper: The lease keeper renewing this claim until it records.
    """

    def __init__(
        self,
        key: str,
        incident: str,
        token: str,
        write: Callable[[str], None],
        mark_lost: Callable[[str], None],
        keeper: LeaseKeeper,
    ) -> None:
        self.key = key
        self.incident = incident
        self.token = token
        self._write = write
        self._mark_lost = mark_lost
        self._keeper = keeper
        self._recorded = False
        self._lock = threading.Lock()

    def __repr__(self) -> str:
        return f"<act claim {self.key!r} incident={self.incident!r}>"

    def record(self, value: str) -> None:
        """Record the result; see :meth:`host.store.base.ActClaim.record`."""
        if not isinstance(value, str):
            raise TypeError(f"an act's result must be str, got {type(value).__name__}")
        with self._lock:
            if self._recorded:
                raise RuntimeError(f"the act {self.key!r} recorded its result already")
            self._recorded = True
        try:
            self._write(value)
        except StoreError as exc:
            reason = f"the act ran but its result could not be recorded: {exc}"
            try:
                self._mark_lost(reason)
            except StoreError as again:
                log.debug("could not mark the act %r lost either: %s", self.key, again)
            log.error(
                "act %r (incident %s): %s", self.key, self.incident, reason, extra={"act": self.key}
            )
            raise
        finally:
            # NOTE: after the write, not before: while a slow write waits for the store, the
            # claim must not lapse and read as lost when its result is about to be there.
            self._keeper.drop(self.token)


def wait_until_settled(state: Callable[[], ActState | None], timeout_s: float) -> ActState | None:
    """Poll ``state`` with a gentle backoff until it is not ``running`` or ``timeout_s`` passed.

    NOTE: waits for an act are rare (a retry arriving while its act runs) and short (a lease
    lapses within seconds), so polling beats a watcher thread here; the backoff settles at a
    quarter second, a few reads a second per waiting retry.
    """
    deadline = time.monotonic() + max(0.0, timeout_s)
    delays = backoff(0.01, 0.25)
    while True:
        found = state()
        if found is None or found.status != "running":
            return found
        left = deadline - time.monotonic()
        if left <= 0:
            return found
        time.sleep(min(next(delays), left))
