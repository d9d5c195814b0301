"""One session's open questions are capped (HOST_LIMIT_QUESTIONS_PER_SESSION), as the attacker.

On an anonymous host (no auth settings, so nobody is limited as one principal) one legacy session
opens ``close_ticket`` calls and never answers: each question holds its request's thread until
HOST_ANSWER_TIMEOUT. Before the limit one session could hold every thread of every worker; now it
holds at most the limit in each of the two workers, the rest are refused with 429, and another
session, and ``/healthz``, are served meanwhile.
"""

from __future__ import annotations

import http.client
import json
from pathlib import Path
from typing import Any

import pytest

from support.legacy import FORM, NEWEST, Legacy
from support.servers import Server, host_serve
from support.waiting import wait_until
from support.wire import HEADERS, Served, sse

pytestmark = pytest.mark.served

LIMIT = 3


def open_question(
    server: Server, session: str
) -> tuple[http.client.HTTPConnection, int, dict[str, Any]]:
    """A ``close_ticket`` call of ``session`` on a connection of its own, its first message read."""
    conn = http.client.HTTPConnection("127.0.0.1", server.port, timeout=30)
    body = {"jsonrpc": "2.0", "id": 7, "method": "tools/call",
            "params": {"name": "close_ticket", "arguments": {"id": "T-1"}}}  # fmt: skip
    headers = {**HEADERS, "Mcp-Session-Id": session, "MCP-Protocol-Version": NEWEST}
    conn.request("POST", "/mcp", json.dumps(body), headers)
    response = conn.getresponse()
    if response.status != 200:
        first = json.loads(response.read())
        first["retry-after"] = response.getheader("Retry-After")
        return conn, response.status, first
    return conn, response.status, next(sse(response))


def session(server: Server) -> str:
    legacy = Legacy(Served(server.connect()))
    legacy.initialize(NEWEST, FORM)
    assert legacy.session
    return legacy.session


def test_one_sessions_open_questions_are_capped_in_each_worker(tmp_path: Path) -> None:
    env = {"HOST_LIMIT_QUESTIONS_PER_SESSION": str(LIMIT)}
    with host_serve(tmp_path, "host", "--workers", "2", **env) as server:
        flooding = session(server)
        held, statuses = [], []
        try:
            for _ in range(4 * LIMIT):
                conn, status, first = open_question(server, flooding)
                statuses.append(status)
                held.append(conn)
                if status == 200:
                    assert first["method"] == "elicitation/create"
                else:
                    assert status == 429 and first["retry-after"] == "1"
                    assert first["error"]["code"] == -32029
                    assert first["error"]["data"]["limit"] == "questions_per_session"
                    assert "HOST_LIMIT_QUESTIONS_PER_SESSION" in first["error"]["message"]
            assert statuses.count(200) <= 2 * LIMIT and statuses.count(429) >= 2 * LIMIT
            # another session asks, and the probes answer, while the flood holds its questions
            conn, status, first = open_question(server, session(server))
            held.append(conn)
            assert status == 200 and first["method"] == "elicitation/create"
            probe = server.connect()
            probe.request("GET", "/healthz")
            assert probe.getresponse().status == 200
        finally:
            for conn in held:
                conn.close()
        # a question given up frees its place (its worker notices at its next keep-alive, 15 s)

        def asks_again() -> bool:
            conn, status, _ = open_question(server, flooding)
            conn.close()
            return status == 200

        assert wait_until(asks_again, 40, every_s=1)
