"""Legacy sessions across gunicorn workers: the real ``host serve`` with two gthread workers.

A question is asked on a stream held by one worker and answered on a connection held by the other
(which worker holds a connection is read from the ``pid`` of the JSON log lines, so "the answer
reached the other worker" is checked, not hoped for). The fallback tool's ids, and the end of a
session, hold across workers the same way.
"""

from __future__ import annotations

import http.client
import json
from collections.abc import Iterator
from typing import Any

import pytest

from support.servers import Server, host_serve
from support.wire import HEADERS, send, sse
from support.workers import connections_on_two_workers, worker_of

pytestmark = pytest.mark.served

CONFIRMED = {"action": "accept", "content": {"confirm": True}}


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    tmp_path = tmp_path_factory.mktemp("legacy-workers")
    with host_serve(tmp_path, "host", "--workers", "2", "--threads", "8") as running:
        yield running


class Session:
    """A raw legacy session whose messages go over whichever connection a test names."""

    def __init__(self, conn: http.client.HTTPConnection, version: str, caps: Any) -> None:
        params = {"protocolVersion": version, "capabilities": caps, "clientInfo": {"name": "t"}}
        response = self.send(
            conn, {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": params}
        )
        assert response.status == 200
        self.id = response.getheader("Mcp-Session-Id")
        self.version = json.loads(response.read())["result"]["protocolVersion"]
        assert self.version == version
        self.next_id = 1

    def headers(self) -> dict[str, str]:
        headers = dict(HEADERS)
        if getattr(self, "id", None):
            headers["Mcp-Session-Id"] = self.id
            headers["MCP-Protocol-Version"] = self.version
        return headers

    def send(self, conn: http.client.HTTPConnection, body: Any) -> http.client.HTTPResponse:
        return send(conn, body, **self.headers())

    def request(self, conn: http.client.HTTPConnection, method: str, params: Any) -> Any:
        body = {"jsonrpc": "2.0", "id": self.next_id, "method": method, "params": params}
        self.next_id += 1
        response = self.send(conn, body)
        payload = json.loads(response.read())
        return response.status, payload

    def call(self, conn: http.client.HTTPConnection, name: str, arguments: Any) -> Any:
        status, payload = self.request(conn, "tools/call", {"name": name, "arguments": arguments})
        assert status == 200 and "result" in payload, payload
        return payload["result"]


def test_a_question_on_one_worker_is_answered_on_the_other(server: Server) -> None:
    a, b = connections_on_two_workers(server)
    pid_a, pid_b = worker_of(server, a), worker_of(server, b)
    assert pid_a != pid_b
    session = Session(b, "2025-11-25", {"elicitation": {"form": {}}})
    calls_before = len(server.log_lines("tool_call"))
    body = {
        "jsonrpc": "2.0",
        "id": 7,
        "method": "tools/call",
        "params": {"name": "close_ticket", "arguments": {"id": "T-1"}},
    }
    stream = session.send(a, body)
    assert stream.status == 200
    assert stream.getheader("Content-Type") == "text/event-stream"
    messages = sse(stream)
    question = next(messages)
    assert question["method"] == "elicitation/create"
    answer = {"jsonrpc": "2.0", "id": question["id"], "result": CONFIRMED}
    relayed = session.send(b, answer)
    assert relayed.status == 202 and relayed.read() == b""
    final = next(messages)
    assert final["id"] == 7
    assert final["result"]["structuredContent"] == {"id": "T-1", "closed": True}
    # The log says who did what: the question went out from A, the answer came in at B.
    sent = server.log_lines("question_sent")[-1]
    (received,) = [
        r for r in server.log_lines("answer_relayed") if r["question"] == sent["question"]
    ]
    assert sent["pid"] == pid_a and received["pid"] == pid_b
    calls = server.log_lines("tool_call")[calls_before:]
    assert [
        (c["pid"], c["outcome"], c.get("acted")) for c in calls if c["tool"] == "close_ticket"
    ] == [
        (pid_a, "input_required", None),
        (pid_a, "complete", True),
    ]
    outbox = session.call(b, "list_outbox", {})["structuredContent"]["emails"]
    assert sum("T-1" in email for email in outbox) == 1


def test_the_fallback_tool_across_workers_and_a_second_use_refused(server: Server) -> None:
    a, b = connections_on_two_workers(server)
    session = Session(a, "2025-03-26", {})
    tools = session.request(b, "tools/list", {})[1]["result"]["tools"]
    assert "sendElicitationResult" in [t["name"] for t in tools]
    asked = session.call(a, "close_ticket", {"id": "T-2"})
    eid = json.loads(asked["content"][1]["text"])["elicitationId"]
    assert f'elicitationId: "{eid}"' in asked["content"][0]["text"]
    arguments = {"elicitationId": eid, "action": "accept", "content": {"confirm": True}}
    done = session.call(b, "sendElicitationResult", arguments)
    assert json.loads(done["content"][0]["text"]) == {"id": "T-2", "closed": True}
    again = session.call(a, "sendElicitationResult", arguments)
    assert again["isError"] is True and "already used" in again["content"][0]["text"]
    outbox = json.loads(session.call(a, "list_outbox", {})["content"][0]["text"])["emails"]
    assert sum("T-2" in email for email in outbox) == 1


def test_a_session_ended_on_one_worker_is_refused_by_both(server: Server) -> None:
    a, b = connections_on_two_workers(server)
    session = Session(a, "2025-06-18", {"elicitation": {}})
    assert session.request(b, "ping", {}) == (200, {"jsonrpc": "2.0", "id": 1, "result": {}})
    a.request("DELETE", "/mcp", headers=session.headers())
    ended = a.getresponse()
    assert ended.status == 204
    ended.read()
    for conn in (a, b):
        status, payload = session.request(conn, "tools/list", {})
        assert status == 404 and "Session not found" in payload["error"]["message"]


def test_two_questions_in_flight_at_once(server: Server) -> None:
    a, b = connections_on_two_workers(server)
    c, _ = connections_on_two_workers(server)
    session = Session(c, "2025-11-25", {"elicitation": {}})
    streams = []
    for conn, ticket in ((a, "T-3"), (b, "T-4")):
        body = {"jsonrpc": "2.0", "id": ticket, "method": "tools/call",
                "params": {"name": "delete_ticket", "arguments": {"id": ticket}}}  # fmt: skip
        messages = sse(session.send(conn, body))
        streams.append((ticket, messages, next(messages)))
    # Answered in the opposite order, over a third connection.
    for ticket, _, question in reversed(streams):
        result = CONFIRMED if ticket == "T-3" else {"action": "decline"}
        answer = {"jsonrpc": "2.0", "id": question["id"], "result": result}
        assert session.send(c, answer).read() == b""
    results = {ticket: next(messages) for ticket, messages, _ in streams}
    assert results["T-3"]["result"]["structuredContent"] == {"id": "T-3", "deleted": True}
    assert results["T-4"]["result"]["structuredContent"]["deleted"] is False
