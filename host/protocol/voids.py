"""What a reload that changes a tool would void, counted in the store the host runs on.

A tool's remembered yeses count only under the definition they were kept with
(:mod:`host.protocol.approvals`), and its approval requests are bound to the definition they
were made under (the approvals service voids the others): a reload that changes the tool's
definition digest voids both. This counts them for ``host diff``, reading only.
"""

from __future__ import annotations

import time

from host.protocol.approvals import definition_key, kept_definition
from host.spec.diff import Voids
from host.store import Store

__all__ = ["count_voids"]


def count_voids(store: Store, tool: str, definition: str) -> Voids:
    """What of ``tool``, served now under ``definition``, a reload that changes it voids.

    Raises:
        host.errors.StoreError: The store cannot be read.
    """
    remembered = sum(
        1
        for approval in store.approvals(tool=tool)
        if kept_definition(approval, store.get(definition_key(approval))) == definition
    )
    now = time.time()
    open_requests = [
        r
        for r in store.requests()
        if r.tool == tool and r.definition == definition and r.voidable(now)
    ]
    pending = sum(1 for r in open_requests if r.status(now) == "pending")
    return Voids(remembered, pending, len(open_requests) - pending)
