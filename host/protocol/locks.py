"""A round's ``ctx.locks``: the store's locks, shared by every worker and host instance.

The machine names a lock by the names and values of its ``lock:`` only; the namespace is fixed
here, so an act's locks never meet other users of the store's locks, and every tool of the
server that locks the same names on the same values excludes the others.
"""

from __future__ import annotations

from host.store import Lock, Store

__all__ = ["StoreLocks"]

_NAMESPACE = "act/"


class StoreLocks:
    """Acts' locks in ``store``: a lease each, renewed until released, lapsing if its worker dies.

    Args:
        store: The shared store.
    """

    __slots__ = ("store",)

    def __init__(self, store: Store) -> None:
        self.store = store

    def acquire(self, name: str, wait_s: float) -> Lock | None:
        """Hold the act lock ``name``, waiting up to ``wait_s``; None if another call kept it."""
        return self.store.acquire_lock(_NAMESPACE + name, wait_s=wait_s)
