"""Places: bounded memberships of a group, each until its own expiry, renewed while in use.

A legacy session holds a place in its principal's group for as long as its id is valid, so every
worker (and every instance sharing the store) counts the same sessions, and the place is what makes
a session id valid (ending the session frees it, and leaves nothing behind). A group never holds
more than its limit: taking a place in a full group evicts the members renewed least recently,
so a principal who abandons sessions is never refused, and what it keeps in the store stays
bounded. A backend writes :class:`Places`; :class:`Store` checks the arguments.
"""

from __future__ import annotations

from typing import Protocol

__all__ = ["Places"]


class Places(Protocol):
    """Members of groups, each until its own expiry."""

    def take(self, group: str, member: str, most: int | None, ttl_s: float) -> list[str]:
        """Make ``member`` one of ``group`` for ``ttl_s``, leaving it at most ``most`` live members.

        One atomic step: count, evict the members that expire first (those renewed least
        recently), add. A member already held is renewed and evicts none.

        Returns:
            The members evicted, least recently renewed first.
        """
        ...

    def renew(self, group: str, member: str, ttl_s: float) -> bool:
        """Make a live ``member`` of ``group`` expire ``ttl_s`` from now; whether it was one."""
        ...

    def holds(self, group: str, member: str) -> bool:
        """Whether ``member`` is a live member of ``group``."""
        ...

    def give(self, group: str, member: str) -> None:
        """Remove ``member`` from ``group`` if it is one."""
        ...
