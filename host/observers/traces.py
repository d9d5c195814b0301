"""OpenTelemetry spans of every round, when OpenTelemetry is installed and configured.

Each round of a ``tools/call`` is one span, ``tools/call <tool>`` (kind SERVER), parented by the
W3C trace context the request carried (``traceparent`` and ``tracestate`` in ``params._meta``, as
the semantic conventions for MCP say, or the HTTP headers), with the conventions' attributes
(``mcp.method.name``, ``gen_ai.tool.name``, ``gen_ai.operation.name``, ``mcp.protocol.version``,
``error.type``, ``rpc.response.status_code``) and the host's own (``host.tool_call.round``,
``host.tool_call.outcome``, ``host.tool_call.acted``, ``host.tool_call.replayed``).

Tracing is on when a tracer provider is already installed in the process (``opentelemetry-
instrument``, or code that set one), or when the standard variables ask for an exporter
(``OTEL_TRACES_EXPORTER``, ``OTEL_EXPORTER_OTLP_ENDPOINT``, ``OTEL_EXPORTER_OTLP_TRACES_ENDPOINT``)
and the SDK is installed (the ``otel`` extra, :mod:`host.extras`): the provider is then built
from the same variables (service name and resource, sampler, batch processor, OTLP over HTTP
or the console). ``OTEL_SDK_DISABLED=true`` or ``OTEL_TRACES_EXPORTER=none`` turn it off.
Otherwise nothing of OpenTelemetry is imported, and a round costs nothing more.

NOTE: the span is made from the round's event once the round has ended (start and end times from
its duration), like every other observer's view of it; so a handler's own spans are not its
children.
"""

from __future__ import annotations

import logging
import sys
import time
from collections.abc import Mapping
from typing import Any

from host.extras import install_line
from host.protocol.events import Round

__all__ = ["TraceObserver", "trace_observer", "tracing_requested"]

log = logging.getLogger("host.observers")

_ENDPOINTS = ("OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT")


def tracing_requested(env: Mapping[str, str]) -> bool:
    """Whether the standard variables ask for traces to be exported."""
    if env.get("OTEL_SDK_DISABLED", "").strip().lower() == "true":
        return False
    exporters = env.get("OTEL_TRACES_EXPORTER", "").strip().lower()
    if exporters:
        return exporters != "none"
    return any(env.get(name, "").strip() for name in _ENDPOINTS)


def trace_observer(env: Mapping[str, str]) -> TraceObserver | None:
    """The observer that makes spans, or None when tracing is off (nothing is imported then)."""
    requested = tracing_requested(env)
    if not requested and "opentelemetry.trace" not in sys.modules:
        return None
    try:
        from opentelemetry import trace
    except ImportError:
        log.warning(
            "OpenTelemetry variables are set but the package is not installed: %s",
            install_line("otel"),
            extra={"event": "tracing_unavailable"},
        )
        return None
    if isinstance(trace.get_tracer_provider(), trace.ProxyTracerProvider):
        if not requested:
            return None
        provider = _provider(env)
        if provider is None:
            return None
        trace.set_tracer_provider(provider)
    return TraceObserver(trace.get_tracer("host"))


class TraceObserver:
    """Makes one span per round.

    Args:
        tracer: An OpenTelemetry tracer.
    """

    def __init__(self, tracer: Any) -> None:
        from opentelemetry.trace import SpanKind, Status, StatusCode
        from opentelemetry.trace.propagation.tracecontext import TraceContextTextMapPropagator

        self.tracer = tracer
        self._propagator = TraceContextTextMapPropagator()
        self._kind = SpanKind.SERVER
        self._status, self._error = Status, StatusCode.ERROR

    def round_ended(self, event: Round) -> None:
        """The round's span, with its parent from the request's trace context."""
        end = time.time_ns()
        parent = self._propagator.extract(dict(event.trace)) if event.trace else None
        span = self.tracer.start_span(
            f"{event.method} {event.tool}",
            context=parent,
            kind=self._kind,
            start_time=end - int(event.duration_s * 1e9),
            attributes=_attributes(event),
        )
        if event.outcome == "rejected":
            span.set_status(self._status(self._error, f"JSON-RPC error {event.code}"))
        elif event.outcome == "error":
            span.set_status(self._status(self._error, "tool_error"))
        span.end(end_time=end)


def _attributes(event: Round) -> dict[str, Any]:
    attributes: dict[str, Any] = {
        "mcp.method.name": event.method,
        "gen_ai.tool.name": event.tool,
        "gen_ai.operation.name": "execute_tool",
        "host.tool_call.round": event.round,
        "host.tool_call.outcome": event.outcome,
    }
    if event.version:
        attributes["mcp.protocol.version"] = event.version
    if event.outcome in ("complete", "error"):
        attributes["host.tool_call.acted"] = event.acted
        attributes["host.tool_call.replayed"] = event.replayed
    if event.outcome == "error":
        attributes["error.type"] = "tool_error"
    if event.outcome == "rejected" and event.code is not None:
        attributes["error.type"] = attributes["rpc.response.status_code"] = str(event.code)
    return attributes


def _provider(env: Mapping[str, str]) -> Any:
    """A tracer provider built from the standard variables; None without the SDK."""
    try:
        from opentelemetry.sdk.resources import Resource
        from opentelemetry.sdk.trace import TracerProvider
        from opentelemetry.sdk.trace.export import BatchSpanProcessor, ConsoleSpanExporter
    except ImportError:
        log.warning(
            "OpenTelemetry variables are set but its SDK is not installed: %s",
            install_line("otel"),
            extra={"event": "tracing_unavailable"},
        )
        return None
    resource = Resource.create()
    if str(resource.attributes.get("service.name", "")).startswith("unknown_service"):
        resource = resource.merge(Resource({"service.name": "host"}))
    provider = TracerProvider(resource=resource)
    names = env.get("OTEL_TRACES_EXPORTER", "").strip().lower() or "otlp"
    for name in (n.strip() for n in names.split(",") if n.strip()):
        exporter = ConsoleSpanExporter() if name == "console" else _otlp(name, env)
        if exporter is not None:
            provider.add_span_processor(BatchSpanProcessor(exporter))
    return provider


def _otlp(name: str, env: Mapping[str, str]) -> Any:
    protocol = (
        env.get("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL") or env.get("OTEL_EXPORTER_OTLP_PROTOCOL")
    ) or "http/protobuf"
    try:
        if name != "otlp":
            raise ValueError(f"unknown OTEL_TRACES_EXPORTER {name!r} (otlp, console or none)")
        if protocol.strip().lower() == "grpc":
            from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import (
                OTLPSpanExporter as GrpcExporter,
            )

            return GrpcExporter()
        from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter

        return OTLPSpanExporter()
    except (ImportError, ValueError) as exc:
        log.warning(
            "traces will not be exported to %s: %s",
            name,
            exc,
            extra={"event": "tracing_unavailable"},
        )
        return None
