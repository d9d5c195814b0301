"""``GET /metrics`` on a real ``host serve`` with two workers: every worker's counts, summed.

Calls are sent on connections known to be held by different workers; whichever worker answers
``/metrics``, it reports the sum of both, and a worker that exits leaves its counts in the sum
(folded into the archive, its own files gone).
Names and labels follow the OpenTelemetry semantic conventions for MCP where they exist.
"""

from __future__ import annotations

import http.client
import os
import signal
import subprocess
import sys
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from prometheus_client.parser import text_string_to_metric_families

from support.modern import call
from support.servers import alive, host_serve
from support.waiting import wait_until
from support.wire import send
from support.workers import connections_on_two_workers

pytestmark = pytest.mark.served

Samples = dict[tuple[str, frozenset[tuple[str, str]]], float]


def scrape(conn: http.client.HTTPConnection) -> Samples:
    conn.request("GET", "/metrics")
    response = conn.getresponse()
    text = response.read().decode()
    assert response.status == 200, text
    assert response.getheader("Content-Type", "").startswith("text/plain; version=")
    return {
        (sample.name, frozenset(sample.labels.items())): sample.value
        for family in text_string_to_metric_families(text)
        for sample in family.samples
    }


def value(samples: Samples, name: str, **labels: str) -> float:
    return samples.get((name, frozenset(labels.items())), 0.0)


def final_round(first: dict[str, Any]) -> dict[str, Any]:
    (key,) = first["inputRequests"]
    return {
        "inputResponses": {key: {"action": "accept", "content": {"confirm": True}}},
        "requestState": first["requestState"],
    }


def test_metrics_are_summed_over_both_workers(tmp_path: Path) -> None:
    with host_serve(tmp_path, "host", "--workers", "2", "--threads", "4") as server:
        a, b = connections_on_two_workers(server)
        for _ in range(3):
            call(a, "list_outbox", {})
        for _ in range(5):
            call(b, "list_outbox", {})
        first = call(a, "close_ticket", {"id": "T-1"})
        done = call(b, "close_ticket", {"id": "T-1"}, **final_round(first))
        assert done["structuredContent"] == {"id": "T-1", "closed": True}
        again = call(a, "close_ticket", {"id": "T-1"}, **final_round(first))
        assert again == done
        declined = call(a, "delete_ticket", {"id": "T-4"})
        (key,) = declined["inputRequests"]
        call(b, "delete_ticket", {"id": "T-4"}, inputResponses={key: {"action": "decline"}},
             requestState=declined["requestState"])  # fmt: skip
        forged = {"inputResponses": {}, "requestState": first["requestState"][:-4] + "AAAA"}
        body = {"jsonrpc": "2.0", "id": 9, "method": "tools/call", "params": {
            "name": "close_ticket", "arguments": {"id": "T-1"}, **forged, "_meta": {
                "io.modelcontextprotocol/protocolVersion": "2026-07-28",
                "io.modelcontextprotocol/clientCapabilities": {"elicitation": {}}}}}  # fmt: skip
        headers = {"MCP-Protocol-Version": "2026-07-28", "Mcp-Method": "tools/call",
                   "Mcp-Name": "close_ticket"}  # fmt: skip
        assert b"Invalid or expired requestState" in send(b, body, **headers).read()

        rounds = Counter((c["pid"], c["tool"]) for c in server.calls())
        pids = {pid for pid, _ in rounds}
        assert len(pids) == 2
        # Both workers answer /metrics with the same sums.
        seen = [scrape(a), scrape(b)]
        for samples in seen:
            listed = sum(n for (_, tool), n in rounds.items() if tool == "list_outbox")
            assert listed >= 10  # the calls above, and the probes that found the workers
            assert value(samples, "host_tool_rounds_total", tool="list_outbox",
                         outcome="complete") == listed  # fmt: skip
            duration = value(
                samples,
                "mcp_server_operation_duration_seconds_count",
                mcp_method_name="tools/call",
                gen_ai_tool_name="list_outbox",
                error_type="",
            )
            assert duration == listed
            assert value(samples, "host_questions_asked_total", tool="close_ticket") == 1
            assert value(samples, "host_answers_total", tool="close_ticket", action="accept") == 2
            assert value(samples, "host_answers_total", tool="delete_ticket", action="decline") == 1
            assert value(samples, "host_acts_total", tool="close_ticket") == 1
            assert value(samples, "host_replays_total", tool="close_ticket") == 1
            assert value(samples, "host_rejected_states_total",
                         reason="bad signature or encoding") == 1  # fmt: skip
        # Buckets are the semantic conventions' own.
        buckets = {
            dict(labels)["le"]
            for (name, labels) in seen[0]
            if name == "mcp_server_operation_duration_seconds_bucket"
        }
        assert {"0.01", "0.02", "300.0", "+Inf"} <= buckets

        # A worker that exits leaves its counts in the sums.
        before = value(seen[0], "host_tool_rounds_total", tool="list_outbox", outcome="complete")
        gone = server.calls()[-1]["pid"]
        # Idle, as a worker a deploy retires usually is: one holding a kept-alive connection
        # would wait for it up to the graceful timeout (10 s).
        a.close()
        b.close()
        os.kill(gone, signal.SIGTERM)
        assert wait_until(lambda: not alive(gone), timeout_s=30)
        after = scrape(server.connect())
        assert value(after, "host_tool_rounds_total", tool="list_outbox",
                     outcome="complete") >= before  # fmt: skip
        folder = next((tmp_path / "host" / "metrics").iterdir())
        assert folder.name == str(server.pid)
        # Its counts are folded into the archive and its own files removed (issue 21).
        assert wait_until(lambda: not any(str(gone) in f.name for f in folder.iterdir()))
        assert (folder / "counter_archive.db").exists()
        again = scrape(server.connect())
        assert value(again, "host_tool_rounds_total", tool="list_outbox",
                     outcome="complete") >= before  # fmt: skip


def test_auth_failures_are_counted(tmp_path: Path) -> None:
    tokens = tmp_path / "tokens"
    made = subprocess.run(
        [sys.executable, "-m", "host", "token", "create", "ci", "--file", str(tokens)],
        capture_output=True, text=True, timeout=60, check=True,
    )  # fmt: skip
    token = made.stdout.strip()
    with host_serve(tmp_path, "host", "--workers", "2", HOST_AUTH_TOKENS=str(tokens)) as server:
        body = {"jsonrpc": "2.0", "id": 1, "method": "initialize",
                "params": {"protocolVersion": "2025-11-25", "capabilities": {}}}  # fmt: skip
        # NOTE: a connection per request: this counts refusals, and on a loaded machine a
        # kept-alive connection can be closed by its worker just as the next request goes out.
        missing = send(server.connect(), body)
        missing.read()
        assert missing.status == 401
        refused = send(server.connect(), body, Authorization="Bearer not-a-token")
        refused.read()
        assert refused.status == 401
        allowed = send(server.connect(), body, Authorization=f"Bearer {token}")
        allowed.read()
        assert allowed.status == 200
        samples = scrape(server.connect())
        assert value(samples, "host_auth_failures_total", status="401", reason="missing") == 1
        assert value(samples, "host_auth_failures_total", status="401",
                     reason="invalid_token") == 1  # fmt: skip


def test_metrics_off(tmp_path: Path) -> None:
    with host_serve(tmp_path, "host", "--workers", "2", HOST_METRICS="off") as server:
        conn = server.connect()
        call(conn, "list_outbox", {})
        conn.request("GET", "/metrics")
        response = conn.getresponse()
        response.read()
        assert response.status == 404
        assert not (tmp_path / "host" / "metrics").exists()


def test_a_missing_scope_is_counted_as_a_403(tmp_path: Path) -> None:
    from host.errors import ScopeError
    from host.machine import compile_project
    from host.observers.metrics import MetricsObserver
    from host.protocol import RequestContext, ToolHost
    from host.store import open_store
    from support.helpdesk import HELPDESK

    machines = compile_project(HELPDESK)
    machines["close_ticket"].scopes = frozenset({"tickets:write"})
    metrics = MetricsObserver()
    store = open_store(f"sqlite:///{tmp_path / 'store.db'}")
    host = ToolHost(HELPDESK.server, machines, store, observers=[metrics])
    with pytest.raises(ScopeError):
        host.machine("close_ticket", RequestContext())
    host.machine("list_outbox", RequestContext())
    text = metrics.exposition()[0].decode()
    samples = {
        (s.name, frozenset(s.labels.items())): s.value
        for family in text_string_to_metric_families(text)
        for s in family.samples
    }
    assert value(samples, "host_auth_failures_total", status="403",
                 reason="insufficient_scope") == 1  # fmt: skip
