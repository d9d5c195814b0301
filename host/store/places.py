"""Places: counted memberships of a group, each with its own expiry, taken only below a limit.

A legacy session holds a place in its principal's group for as long as its id is valid, so every
worker (and every instance sharing the store) counts the same sessions: a principal at its limit
is refused ``initialize`` anywhere, and the place is what makes a session id valid (ending the
session frees it, and leaves nothing behind). A backend writes :class:`Places`; :class:`Store`
checks the arguments.
"""

from __future__ import annotations

from typing import Protocol

__all__ = ["Places"]


class Places(Protocol):
    """Members of groups, each until its own expiry."""

    def take(self, group: str, member: str, most: int | None, ttl_s: float) -> float | None:
        """Make ``member`` one of ``group`` for ``ttl_s`` unless it has ``most`` live members.

        Returns:
            None when taken (or already held: its expiry is renewed); else the seconds until the
            group's oldest member expires.
        """
        ...

    def holds(self, group: str, member: str) -> bool:
        """Whether ``member`` is a live member of ``group``."""
        ...

    def give(self, group: str, member: str) -> None:
        """Remove ``member`` from ``group`` if it is one."""
        ...
