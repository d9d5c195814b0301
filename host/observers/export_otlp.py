"""The audit trail exported as OpenTelemetry log records, over OTLP/HTTP (the otel extra).

``HOST_AUDIT_EXPORT=otlp`` sends each record as one log record: its body the record as
``host audit --format json`` prints it, its attributes ``host.audit.seq``, ``.kind``, ``.hash``,
``.tool``, ``.principal``, ``.outcome``, its time the record's. Where they go is OpenTelemetry's
own configuration (``OTEL_EXPORTER_OTLP_LOGS_ENDPOINT`` or ``OTEL_EXPORTER_OTLP_ENDPOINT``, its
headers and timeout). One exporter at a time for the whole store (a store lock), and the cursor,
the last seq the collector took, kept in the store: every instance resumes where the last
stopped, and a batch the collector refused is sent again from its first record.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Iterator, Sequence
from typing import Any

from host.errors import HostError
from host.extras import install_line
from host.store import Store
from host.store.records import parse_iso

__all__ = ["OtlpSink", "check_installed"]

_LOCK = "audit-export:otlp"
_CURSOR = "audit-export:otlp:seq"
#: How long the cursor is kept without an export (it is rewritten by each one).
_CURSOR_TTL_S = 10 * 365 * 86400.0


def check_installed() -> None:
    """Raise HostError, saying how to install it, when OpenTelemetry's exporter is missing."""
    try:
        import opentelemetry.exporter.otlp.proto.http._log_exporter
        import opentelemetry.sdk._logs  # noqa: F401
    except ImportError:
        raise HostError(
            f"HOST_AUDIT_EXPORT=otlp needs OpenTelemetry: {install_line('otel')}"
        ) from None


class OtlpSink:
    """Sends lines as OpenTelemetry log records.

    Args:
        store: The store, which holds the lock and the cursor.

    Raises:
        HostError: OpenTelemetry's SDK or OTLP exporter is not installed.
    """

    where = "otlp"

    def __init__(self, store: Store) -> None:
        check_installed()
        from opentelemetry._logs import LogRecord
        from opentelemetry.exporter.otlp.proto.http._log_exporter import OTLPLogExporter
        from opentelemetry.sdk._logs import LoggerProvider

        self.store = store
        self._record = LogRecord
        self._exporter = OTLPLogExporter()
        self._collected: list[Any] = []
        provider = LoggerProvider()
        provider.add_log_record_processor(_Collect(self._collected))  # type: ignore[arg-type]
        self._logger = provider.get_logger("host.audit")

    @contextlib.contextmanager
    def turn(self) -> Iterator[int | None]:
        """This process's turn to export: the last seq sent, or None (another has it)."""
        lock = self.store.acquire_lock(_LOCK)
        if lock is None:
            yield None
            return
        try:
            yield int(self.store.get(_CURSOR) or 0)
        finally:
            lock.release()

    def write(self, lines: Sequence[tuple[int, str]]) -> None:
        """Send ``lines`` as one batch; keep its last seq as the cursor once it is taken.

        Raises:
            OSError: The collector refused the batch or could not be reached.
        """
        self._collected.clear()
        for _, text in lines:
            record = json.loads(text)
            nanos = int(parse_iso(record["time"]) * 1e9)
            attributes = {f"host.audit.{k}": str(record.get(k)) for k in _ATTRIBUTES}
            self._logger.emit(
                self._record(timestamp=nanos, observed_timestamp=nanos, body=text,
                             severity_text="INFO", attributes=attributes)
            )  # fmt: skip
        result = self._exporter.export(list(self._collected))
        if getattr(result, "name", "") != "SUCCESS":
            raise OSError(f"the OTLP collector did not take the batch ({result})")
        self.store.put(_CURSOR, str(lines[-1][0]), _CURSOR_TTL_S)


_ATTRIBUTES = ("seq", "kind", "hash", "id", "tool", "principal", "outcome")


class _Collect:
    """A log record processor that keeps what is emitted, to export it at once."""

    def __init__(self, into: list[Any]) -> None:
        self._into = into

    def on_emit(self, record: Any) -> None:
        self._into.append(record)

    emit = on_emit

    def shutdown(self) -> None:
        return None

    def force_flush(self, timeout_millis: int = 30000) -> bool:
        return True
