"""The lease keeper: renews every live act claim and lock of this process, every lease/3.

An act claim is only ``running`` while its owner's lease lasts, and a lock only held while its
holder's does. Renewing each claim from the
thread that runs its act would tie the lease to the act (a hanging act would have to renew, and a
busy act would forget to); instead one thread per store object and process renews all of the
process's claims (and locks) together, so each lives exactly as long as the process that holds it.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable

from host.errors import StoreError
from host.store.threads import ProcessThread

__all__ = ["LeaseKeeper"]

log = logging.getLogger("host.store")

Renew = Callable[[list[tuple[str, str]], list[tuple[str, str]]], None]
"""Extends the leases of the given ``(token, key)`` act claims and ``(token, name)`` locks, in as
few writes as it can; claims that recorded their result, or were marked lost, are left as they
are."""


class LeaseKeeper(ProcessThread):
    """Renews the leases of this process's live act claims and locks from one background thread.

    Args:
        renew: The renewal of many claims and locks at once.
        lease_s: The lease's length; the keeper renews every third of it.
        what: The store, as named in log messages.
    """

    def __init__(self, renew: Renew, lease_s: float, what: str) -> None:
        self._renew = renew
        self.lease_s = lease_s
        self._what = what
        super().__init__("host-store-leases")

    def _reset(self) -> None:
        self._held: dict[str, str] = {}  # token -> key, in the order claimed
        self._locks: dict[str, str] = {}  # token -> lock name, in the order taken

    def hold(self, token: str, key: str) -> None:
        """Renew the claim ``token`` (on ``key``) until :meth:`drop` is called for it."""
        with self._lock:
            self._held[token] = key
            # NOTE: no notify: waking the keeper per claim cost every request thread a turn of
            # the GIL. An idle keeper looks again every third of a lease and renews at once what
            # it finds, so a claim is renewed within a third of its lease either way.
            self._start()

    def hold_lock(self, token: str, name: str) -> None:
        """Renew the lock ``name`` held with ``token`` until :meth:`drop` is called for it."""
        with self._lock:
            self._locks[token] = name
            self._start()

    def drop(self, token: str) -> None:
        """Stop renewing the claim or lock ``token``."""
        with self._lock:
            if self._held.pop(token, None) is None:
                self._locks.pop(token, None)

    def held(self) -> int:
        """How many claims this process renews now."""
        with self._lock:
            return len(self._held)

    def stop(self) -> None:
        """Stop renewing: the claims still held read ``lost`` once their leases lapse."""
        held = self.held()
        if held:
            log.warning(
                "%s closed while %d act claim(s) had no result yet; they will read as lost",
                self._what,
                held,
            )
        super().stop()

    def _run(self) -> None:
        every = self.lease_s / 3
        due: float | None = None
        failing = False
        while True:
            with self._lock:
                while True:
                    if self._stopping:
                        return
                    if not self._held and not self._locks:
                        due = None  # idle: look again in a third of a lease
                        self._changed.wait(every)
                        continue
                    now = time.monotonic()
                    if due is None:
                        due = now  # claims made while idle: renew them now
                    if now >= due:
                        break
                    # NOTE: a new claim notifies us, but renewing then would cost one write per
                    # claim; the cadence stays fixed, and a new claim is renewed within `every`.
                    self._changed.wait(due - now)
                batch, locks = list(self._held.items()), list(self._locks.items())
            due = time.monotonic() + every
            try:
                self._renew(batch, locks)
            except StoreError as exc:
                if not failing:
                    log.warning(
                        "could not renew %d act claim(s) and %d lock(s) in %s; the claims read "
                        "as lost and the locks come free once their lease of %gs lapses: %s",
                        len(batch),
                        len(locks),
                        self._what,
                        self.lease_s,
                        exc,
                    )
                failing = True
            else:
                if failing:
                    log.info("renewing act claims in %s works again", self._what)
                failing = False
