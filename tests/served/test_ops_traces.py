"""Traces: one span per round, ``tools/call <tool>``, parented by the caller's trace context.

In-process, with the OpenTelemetry SDK's in-memory exporter: the modern revision's parent comes
from ``params._meta`` (``traceparent`` and ``tracestate``), a legacy session's from the HTTP
``traceparent`` header. Then a real ``host serve`` configured only by OpenTelemetry's standard
variables (the console exporter) shows the same span; and without those variables nothing of
OpenTelemetry is even imported.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import SpanKind, StatusCode

from host.assembly import assemble
from host.observers.traces import TraceObserver
from host.protocol import Endpoint, LogObserver, RequestContext
from support.helpdesk import HELPDESK, settings_for
from support.paths import SPECS
from support.servers import clean_env, host_serve
from support.waiting import wait_until

pytestmark = pytest.mark.served

TRACE_ID = "4bf92f3577b34da6a3ce929d0e0e4736"
PARENT_ID = "00f067aa0ba902b7"
TRACEPARENT = f"00-{TRACE_ID}-{PARENT_ID}-01"
TRACESTATE = "rojo=00f067aa0ba902b7,congo=t61rcWkgMzE"
MODERN = "2026-07-28"


@pytest.fixture
def traced(tmp_path: Path, db: Path) -> tuple[Endpoint, InMemorySpanExporter]:
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    observers = [LogObserver(), TraceObserver(provider.get_tracer("tests"))]
    served = assemble(settings_for(tmp_path), HELPDESK, observers=observers)
    return served.endpoint, exporter


def modern(endpoint: Endpoint, name: str, arguments: dict[str, Any], **params: Any) -> Any:
    meta = {
        "io.modelcontextprotocol/protocolVersion": MODERN,
        "io.modelcontextprotocol/clientCapabilities": {"elicitation": {}},
        "traceparent": TRACEPARENT,
        "tracestate": TRACESTATE,
    }
    body = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "tools/call",
        "params": {"name": name, "arguments": arguments, **params, "_meta": meta},
    }
    headers = {"mcp-protocol-version": MODERN, "mcp-method": "tools/call", "mcp-name": name}
    reply = endpoint.handle(json.dumps(body).encode(), RequestContext.http(headers))
    assert reply.body is not None
    return reply.body["result"]


def test_each_modern_round_is_a_span_under_the_callers_span(
    traced: tuple[Endpoint, InMemorySpanExporter],
) -> None:
    endpoint, exporter = traced
    first = modern(endpoint, "close_ticket", {"id": "T-1"})
    (key,) = first["inputRequests"]
    answer = {key: {"action": "accept", "content": {"confirm": True}}}
    modern(endpoint, "close_ticket", {"id": "T-1"}, inputResponses=answer,
           requestState=first["requestState"])  # fmt: skip
    spans = exporter.get_finished_spans()
    assert [s.name for s in spans] == ["tools/call close_ticket"] * 2
    for number, span in enumerate(spans, 1):
        assert span.kind is SpanKind.SERVER
        assert span.parent is not None and span.parent.is_remote
        assert format(span.parent.span_id, "016x") == PARENT_ID
        assert format(span.context.trace_id, "032x") == TRACE_ID
        assert span.context.trace_state.to_header() == TRACESTATE
        assert span.attributes is not None
        assert span.attributes["gen_ai.tool.name"] == "close_ticket"
        assert span.attributes["mcp.method.name"] == "tools/call"
        assert span.attributes["gen_ai.operation.name"] == "execute_tool"
        assert span.attributes["mcp.protocol.version"] == MODERN
        assert span.attributes["host.tool_call.round"] == number
        assert span.start_time is not None and span.end_time is not None
        assert span.start_time <= span.end_time
    assert spans[0].attributes is not None and spans[1].attributes is not None
    assert spans[0].attributes["host.tool_call.outcome"] == "input_required"
    assert spans[1].attributes["host.tool_call.outcome"] == "complete"
    assert spans[1].attributes["host.tool_call.acted"] is True


def test_a_rejected_round_is_an_error_span(
    traced: tuple[Endpoint, InMemorySpanExporter],
) -> None:
    endpoint, exporter = traced
    first = modern(endpoint, "close_ticket", {"id": "T-1"})
    (key,) = first["inputRequests"]
    bad = {key: {"action": "accept", "content": {"confirm": "yes"}}}
    body = {
        "jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {
            "name": "close_ticket", "arguments": {"id": "T-1"}, "inputResponses": bad,
            "requestState": first["requestState"], "_meta": {
                "io.modelcontextprotocol/protocolVersion": MODERN,
                "io.modelcontextprotocol/clientCapabilities": {"elicitation": {}},
                "traceparent": TRACEPARENT}}}  # fmt: skip
    headers = {
        "mcp-protocol-version": MODERN,
        "mcp-method": "tools/call",
        "mcp-name": "close_ticket",
    }
    endpoint.handle(json.dumps(body).encode(), RequestContext.http(headers))
    span = exporter.get_finished_spans()[-1]
    assert span.status.status_code is StatusCode.ERROR
    assert span.attributes is not None
    assert span.attributes["host.tool_call.outcome"] == "rejected"
    assert span.attributes["error.type"] == span.attributes["rpc.response.status_code"] == "-32602"


def test_a_legacy_round_takes_its_parent_from_the_http_header(
    traced: tuple[Endpoint, InMemorySpanExporter],
) -> None:
    endpoint, exporter = traced
    init = {"jsonrpc": "2.0", "id": 0, "method": "initialize",
            "params": {"protocolVersion": "2025-06-18", "capabilities": {}}}  # fmt: skip
    session = endpoint.handle(json.dumps(init).encode(), RequestContext.http({}))
    sid = session.headers["Mcp-Session-Id"]
    body = {"jsonrpc": "2.0", "id": 1, "method": "tools/call",
            "params": {"name": "list_outbox", "arguments": {}}}  # fmt: skip
    headers = {"mcp-session-id": sid, "traceparent": TRACEPARENT}
    endpoint.handle(json.dumps(body).encode(), RequestContext.http(headers))
    (span,) = exporter.get_finished_spans()
    assert span.name == "tools/call list_outbox"
    assert span.parent is not None and format(span.parent.span_id, "016x") == PARENT_ID
    assert span.attributes is not None
    assert span.attributes["mcp.protocol.version"] == "2025-06-18"


def test_host_serve_exports_spans_configured_by_the_standard_variables(tmp_path: Path) -> None:
    otel = {"OTEL_TRACES_EXPORTER": "console", "OTEL_BSP_SCHEDULE_DELAY": "100",
            "OTEL_SERVICE_NAME": "desk-tests"}  # fmt: skip
    with host_serve(tmp_path, "host", "--workers", "2", **otel) as server:
        call_with_trace(server.connect())
        exported = wait_until(
            lambda: '"name": "tools/call list_outbox"' in server.log.read_text(), 20, 0.1
        )
        assert exported, server.log.read_text()[-3000:]
        text = server.log.read_text()
    assert f'"parent_id": "0x{PARENT_ID}"' in text
    assert f'"trace_id": "0x{TRACE_ID}"' in text
    assert re.search(r'"service\.name": "desk-tests"', text)


def call_with_trace(conn: Any) -> None:
    meta = {
        "io.modelcontextprotocol/protocolVersion": MODERN,
        "io.modelcontextprotocol/clientCapabilities": {},
        "traceparent": TRACEPARENT,
    }
    body = {"jsonrpc": "2.0", "id": 1, "method": "tools/call",
            "params": {"name": "list_outbox", "arguments": {}, "_meta": meta}}  # fmt: skip
    headers = {"Content-Type": "application/json", "MCP-Protocol-Version": MODERN,
               "Mcp-Method": "tools/call", "Mcp-Name": "list_outbox"}  # fmt: skip
    conn.request("POST", "/mcp", json.dumps(body), headers)
    response = conn.getresponse()
    assert response.status == 200, response.read()
    response.read()


def test_without_the_variables_nothing_of_opentelemetry_is_imported(tmp_path: Path) -> None:
    script = (
        "import sys\n"
        "from host.assembly import assemble\n"
        "from host.settings import Settings\n"
        "served = assemble(Settings.from_env())\n"
        "names = sorted(type(o).__name__ for o in served.observers)\n"
        "print(*names, any(m.startswith('opentelemetry') for m in sys.modules))\n"
    )
    env = clean_env(HOST_SPECS=str(SPECS),
                    HOST_DATA_DIR=str(tmp_path / "data"))  # fmt: skip
    env = {k: v for k, v in env.items() if not k.startswith("OTEL_")}
    done = subprocess.run(
        [sys.executable, "-c", script], env=env, cwd=tmp_path, capture_output=True, text=True,
        timeout=60, check=True,
    )  # fmt: skip
    assert done.stdout.split() == [
        "AuditObserver",
        "LogObserver",
        "MetricsObserver",
        "RequestOutcomes",
        "False",
    ]
