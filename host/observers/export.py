"""The audit trail's export: an observer that reads the chain by ``seq`` and sends it on.

It never writes to the trail and never runs on a request's thread: each process of the host runs
one export thread (started in the process, after gunicorn's fork), which every half second takes
its sink's turn if it is free (:mod:`.export_file`: a file lock per machine; :mod:`.export_otlp`:
a store lock), reads the entries after the sink's last seq through the store, and sends them
in batches, in order. A sink that fails (an unwritable path, a collector down) is tried again
on the next turn from where it stopped, so the export has no gap and no duplicate; a call
never waits for it, and ``/readyz`` does not depend on it. ``host_audit_export_lag`` on
``/metrics`` is how many entries the export is behind the chain's head.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Protocol

from host.jsonvalues import storable
from host.observers.export_file import FileSink
from host.store import Store
from host.store.records import AuditRecord

__all__ = ["AuditExport", "Sink", "export_line", "sink_for"]

log = logging.getLogger("host.audit")


class Sink(Protocol):
    """Where the export goes."""

    where: str

    def turn(self) -> contextlib.AbstractContextManager[int | None]:
        """This process's turn: the last seq exported, or None (another process has it)."""
        ...

    def write(self, lines: Sequence[tuple[int, str]]) -> None:
        """Send ``(seq, line)`` pairs, in order; OSError when they were not all taken."""
        ...


def sink_for(export: str, store: Store, max_bytes: int) -> Sink:
    """The sink ``HOST_AUDIT_EXPORT`` names (``file:PATH`` or ``otlp``)."""
    if export == "otlp":
        from host.observers.export_otlp import OtlpSink

        return OtlpSink(store)
    return FileSink(Path(export[len("file:") :]).absolute(), max_bytes)


def export_line(body: str, hash_: str) -> str:
    """The exported line of an entry: the record as ``host audit --format json`` prints it."""
    record = AuditRecord.from_entry(json.loads(body), hash_)
    return json.dumps(storable(record.describe()), ensure_ascii=False, allow_nan=False)


class AuditExport:
    """Exports the store's audit chain to ``sink`` from a thread of each process.

    Args:
        store: The store.
        sink: Where it goes.
        every_s: How often a process looks for new entries.
        batch: The most entries sent at once.
        lag: Told how far behind the export is after each turn (the metrics).
    """

    def __init__(
        self,
        store: Store,
        sink: Sink,
        *,
        every_s: float = 0.5,
        batch: int = 500,
        lag: Callable[[int], None] | None = None,
    ) -> None:
        self.store = store
        self.sink = sink
        self.every_s = every_s
        self.batch = batch
        self.lag = lag
        self._pid = -1
        self._lock = threading.Lock()
        self._failing: str | None = None
        self._cursor: int | None = None

    def start(self) -> None:
        """Run the export thread in this process (once per process; a fork starts its own)."""
        with self._lock:
            if self._pid == os.getpid():
                return
            self._pid = os.getpid()
            threading.Thread(target=self._run, name="host-audit-export", daemon=True).start()

    def _run(self) -> None:
        while True:
            try:
                self.once()
            except Exception as exc:  # NOTE: the export must never stop for good
                self._failed(exc)
            self._show_lag()
            time.sleep(self.every_s)

    def _show_lag(self) -> None:
        """Tell the metrics how far behind this process's last turn left the export (a failing
        export's lag grows)."""
        if self.lag is None or self._cursor is None:
            return
        try:
            self.lag(max(0, self.store.audit_head() - self._cursor))
        except Exception:  # NOTE: a store that cannot say leaves the last figure
            return

    def once(self) -> int:
        """Take the sink's turn if it is free and send what is new; how many entries were sent.

        Raises:
            OSError, host.errors.StoreError: The sink or the store failed (tried again later).
        """
        sent = 0
        with self.sink.turn() as last:
            if last is None:  # NOTE: another process exports, and shows the lag
                self._cursor = None
                if self.lag is not None:
                    self.lag(0)
                return 0
            self._cursor = last
            for lines in self._pages(last):
                self.sink.write(lines)
                sent += len(lines)
                self._cursor = lines[-1][0]
        if self._failing is not None:
            log.info("the audit export goes on", extra={"event": "audit_export_resumed"})
            self._failing = None
        return sent

    def _pages(self, after: int) -> Iterator[list[tuple[int, str]]]:
        while page := self.store.audit_entries(after=after, limit=self.batch):
            yield [(seq, export_line(body, hash_)) for seq, body, hash_ in page]
            after = page[-1][0]

    def _failed(self, exc: Exception) -> None:
        why = f"{type(exc).__name__}: {exc}"
        if why != self._failing:  # NOTE: once per new reason, not every half second
            log.error(
                "the audit export to %s failed; it resumes where it stopped: %s",
                self.sink.where,
                why,
                extra={"event": "audit_export_failed"},
            )
        self._failing = why
