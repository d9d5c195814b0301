"""A legacy session's ``GET /mcp`` stream: who may open one, and how many a worker holds.

Every open stream holds a gthread thread, so a worker keeps at most 256 (a quarter of its 1024
threads): one more is answered 503 with ``Retry-After`` while the worker serves everything else,
and a stream whose client went away gives its thread back within a second or two, without
waiting for its next keep-alive.
"""

from __future__ import annotations

import http.client
import json
import time
from pathlib import Path

import pytest

from support.legacy import LegacyHttp
from support.servers import Server, host_serve
from support.waiting import wait_until

pytestmark = pytest.mark.served


def open_stream(
    server: Server, session: str | None, accept: str = "text/event-stream"
) -> http.client.HTTPResponse:
    conn = http.client.HTTPConnection("127.0.0.1", server.port, timeout=30)
    headers = {"Accept": accept}
    if session is not None:
        headers["Mcp-Session-Id"] = session
    conn.request("GET", "/mcp", headers=headers)
    return conn.getresponse()


CAP = 256


def test_get_streams_are_for_sessions_and_bounded_per_worker(tmp_path: Path) -> None:
    # NOTE: one session opens every stream here, so its own limit is raised above the worker's.
    with host_serve(
        tmp_path, "host", "--workers", "1", HOST_LIMIT_STREAMS_PER_SESSION=str(CAP + 1)
    ) as server:
        session = LegacyHttp(server).session
        no_session = open_stream(server, None)
        assert no_session.status == 405
        assert no_session.getheader("Allow") == "POST"
        assert open_stream(server, "forged").status == 404
        assert open_stream(server, session, accept="application/json").status == 406

        streams = [open_stream(server, session) for _ in range(CAP)]
        assert [s.status for s in streams] == [200] * CAP
        for stream in streams:
            assert stream.getheader("Content-Type") == "text/event-stream"
            # Something comes at once, so the client has its headers without waiting.
            assert stream.readline() == b": keep-alive\n"
        refused = open_stream(server, session)
        assert refused.status == 503
        assert refused.getheader("Retry-After") == "30"
        assert "GET streams" in json.loads(refused.read())["error"]["message"]
        # The worker still answers everything else with its other threads.
        assert "list_outbox" in LegacyHttp(server).tools()

        started = time.monotonic()
        for stream in streams:
            stream.close()
        assert wait_until(lambda: open_stream(server, session).status == 200, timeout_s=10)
        assert time.monotonic() - started < 10
