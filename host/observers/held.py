"""Audit records the store refused, held in order until it takes writes again.

While the store cannot take writes (its disk is full, Redis is down), each process holds the
records it could not write, oldest first, and writes them before any newer one once a write
succeeds: the trail keeps its order and loses nothing. A process holds at most ``most`` records
(``HOST_AUDIT_HELD_MAX``, 10,000 by default: a few megabytes); a record that would go past the
bound is dropped, counted (``host_audit_dropped_total``) and logged with its call's id
(``audit_dropped``), so what is missing is known. Held records live in the process's memory: a
worker that is killed meanwhile loses them (its acts' claims are not affected).
"""

from __future__ import annotations

import logging
import threading
from collections import deque
from collections.abc import Callable, Sequence

from host.store.records import AuditRecord

__all__ = ["Held", "Writes"]

log = logging.getLogger("host.audit")

Writes = list[tuple[AuditRecord, int]]
"""Records to write, each with its rank."""


class Held:
    """The records a process holds for the store, oldest first, at most ``most``.

    Args:
        most: The bound.
        changed: Told the number held and the number dropped so far after each change
            (the metrics).
    """

    def __init__(self, most: int, changed: Callable[[int, int], None] | None = None) -> None:
        self.most = most
        self.dropped = 0
        self._records: deque[tuple[AuditRecord, int]] = deque()
        self._lock = threading.Lock()
        self.changed = changed

    def __len__(self) -> int:
        return len(self._records)

    def hold(self, records: Sequence[tuple[AuditRecord, int]], why: str) -> None:
        """Hold ``records`` after those held already; drop (and log) those past the bound."""
        with self._lock:
            room = max(0, self.most - len(self._records))
            self._records.extend(records[:room])
            dropped = records[room:]
            self.dropped += len(dropped)
        for record, _ in dropped:
            log.error(
                "an audit record was dropped: the store refuses writes and %d are held already",
                self.most,
                extra={"event": "audit_dropped", "call": record.id, "tool": record.tool,
                       "principal": record.principal, "outcome": record.outcome, "reason": why},
            )  # fmt: skip
        self._tell()

    def take(self) -> Writes:
        """Every record held, oldest first (given back with :meth:`hold_first` if unwritten)."""
        with self._lock:
            taken = list(self._records)
            self._records.clear()
        if taken:
            self._tell()
        return taken

    def hold_first(self, records: Sequence[tuple[AuditRecord, int]]) -> None:
        """Put back records taken, before any held since, within the bound."""
        with self._lock:
            kept = list(records) + list(self._records)
            dropped = kept[self.most :]
            self._records = deque(kept[: self.most])
            self.dropped += len(dropped)
        for record, _ in dropped:
            log.error(
                "an audit record was dropped: more than %d are held for the store",
                self.most,
                extra={"event": "audit_dropped", "call": record.id, "tool": record.tool,
                       "principal": record.principal, "outcome": record.outcome},
            )  # fmt: skip
        self._tell()

    def _tell(self) -> None:
        if self.changed is not None:
            self.changed(len(self._records), self.dropped)
