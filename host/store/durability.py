"""Stores that can lose records say so, and the one start-up rule for them.

An act claim is what stops a retried call from acting twice. A store that forgets claims (a Redis
without persistence restarted, a Redis evicting keys under memory pressure) silently turns "at
most once" into "at most once per restart". :meth:`host.store.Store.durability` lists such
risks (a Redis server's are read in :mod:`host.store.redis.risks`); :func:`require_durable` is
the one rule for what the host does with them at start-up.

``HOST_STORE_VOLATILE_OK=1`` (:data:`VOLATILE_OK`) acknowledges a store that can forget claims:
the host then starts on it with a warning. What it risks: after the store loses its data (a
restart without persistence, an eviction, a crash between snapshots), a client retrying the final
round of a call whose act already ran gets the act run again (a second email, a second refund),
and every open question and signed-in legacy session recorded there is forgotten.
"""

from __future__ import annotations

from host.errors import StoreError
from host.store.shared import Store

__all__ = ["VOLATILE_OK", "require_durable"]

VOLATILE_OK = "HOST_STORE_VOLATILE_OK"
"""The environment variable that, set to ``1``, lets the host start on a store that can forget act
claims (see the module's documentation for what that risks)."""


def require_durable(store: Store, *, acknowledged: bool) -> list[str]:
    """Apply the start-up rule: refuse a store that can forget claims unless acknowledged.

    Args:
        store: The store the host is about to serve from.
        acknowledged: Whether the operator set :data:`VOLATILE_OK` (to ``1``).

    Returns:
        Warnings to show the operator (acknowledged risks say they were acknowledged).

    Raises:
        host.errors.StoreError: A risk that needs acknowledging was not acknowledged; the message
            names every such risk and the variable.
    """
    risks = store.durability()
    refused = [risk.message for risk in risks if risk.refuse]
    if refused and not acknowledged:
        raise StoreError("; ".join(refused))
    return [
        f"{risk.message} (acknowledged by {VOLATILE_OK}=1)" if risk.refuse else risk.message
        for risk in risks
    ]
