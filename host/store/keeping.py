"""The store's plain records, queues and places: each argument checked, then one role's step.

:class:`Keeping` is a part of :class:`host.store.shared.Store` (the contract is there).
"""

from __future__ import annotations

from host.store.checks import check_ttl
from host.store.places import Places
from host.store.roles import Queues, Records
from host.store.waiting import pop_waiting

__all__ = ["Keeping"]


class Keeping:
    """Records, queues and places: what :class:`host.store.shared.Store` keeps for its callers."""

    _records: Records
    _queues: Queues
    _places: Places

    def add(self, key: str, value: str, ttl_s: float) -> bool:
        """Insert a record only if there is none (or only an expired one) for ``key``.

        Returns:
            True if this call inserted it; False if the key was already taken.
        """
        check_ttl(ttl_s)
        return self._records.add(key, value, ttl_s)

    def get(self, key: str) -> str | None:
        """The record's value, or None if there is none or it expired."""
        return self._records.get(key)

    def put(self, key: str, value: str, ttl_s: float) -> None:
        """Insert or overwrite a record."""
        check_ttl(ttl_s)
        self._records.put(key, value, ttl_s)

    def delete(self, key: str) -> None:
        """Remove a record if there is one."""
        self._records.delete(key)

    def push(self, key: str, value: str, ttl_s: float) -> None:
        """Append ``value`` to the queue ``key``, which expires ``ttl_s`` after its last push."""
        check_ttl(ttl_s)
        self._queues.push(key, value, ttl_s)

    def pop(self, key: str, timeout_s: float) -> str | None:
        """Take the oldest value from the queue ``key``, waiting up to ``timeout_s`` for one.

        Each value is taken once, across all processes. A waiting caller costs no store traffic
        of its own: one thread per process watches for pushes and wakes it.

        Returns:
            The value, or None if none arrived in time. ``timeout_s <= 0`` does not wait.
        """
        return pop_waiting(self._queues.watcher, key, timeout_s, self._queues.take)

    def take_place(self, group: str, member: str, *, most: int | None, ttl_s: float) -> list[str]:
        """Make ``member`` a member of ``group`` for ``ttl_s``, evicting past ``most`` members.

        The members that expire first (renewed least recently) make room, so the group never
        holds more than ``most`` live members (``most=None``: no limit); a member already there
        is renewed and evicts none.

        Returns:
            The members evicted, least recently renewed first.
        """
        check_ttl(ttl_s)
        if most is not None and most < 1:
            raise ValueError(f"most must be at least 1, got {most}")
        return self._places.take(group, member, most, ttl_s)

    def renew_place(self, group: str, member: str, *, ttl_s: float) -> bool:
        """Make a live ``member`` of ``group`` expire ``ttl_s`` from now; whether it was one."""
        check_ttl(ttl_s)
        return self._places.renew(group, member, ttl_s)

    def holds_place(self, group: str, member: str) -> bool:
        """Whether ``member`` is a live member of ``group``."""
        return self._places.holds(group, member)

    def give_place(self, group: str, member: str) -> None:
        """Remove ``member`` from ``group`` if it is one."""
        self._places.give(group, member)
