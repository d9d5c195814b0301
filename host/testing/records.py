"""The test kit's view of the audit trail: ``mcp.audit`` reads it from the app's store.

Only the test kit's client has it: a client of a remote host cannot reach its store. (The
approvals a host keeps are :mod:`host.testing.approvals`'.)
"""

from __future__ import annotations

from collections.abc import Callable

from host.store import Store
from host.store.records import AuditRecord

__all__ = ["AuditKit"]


class AuditKit:
    """``mcp.audit``: the audit trail of the app under test.

    Args:
        store: The app's store.
        flush: Writes the records the app still holds (they are written in batches, off the
            request path): called before every read.
    """

    def __init__(self, store: Store, flush: Callable[[], object] = lambda: None) -> None:
        self._store = store
        self._flush = flush

    def records(
        self, *, tool: str | None = None, principal: str | None = None, limit: int = 100
    ) -> list[AuditRecord]:
        """The records of calls that ended, newest first, of ``tool`` and ``principal`` if given."""
        self._flush()
        return self._store.audit_records(tool=tool, principal=principal, limit=limit)

    def last(self, *, tool: str | None = None, principal: str | None = None) -> AuditRecord:
        """The record of the call that ended last.

        Raises:
            AssertionError: There is none (no call of that tool and principal has ended).
        """
        __tracebackhide__ = True
        found = self.records(tool=tool, principal=principal, limit=1)
        if not found:
            raise AssertionError("no call has ended yet, so the audit trail is empty")
        return found[0]
