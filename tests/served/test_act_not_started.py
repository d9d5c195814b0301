"""An act still waiting for a thread when its caller is told about the timeout never starts.

Issue 21: with every handler thread held by acts that hang, 88 callers were told "still
running" for acts that had not started, and those acts ran 100 s later. Here a real
``host serve`` (one worker, its pool of 256 handler threads) is filled with hanging acts; one
more call's act waits for a thread past its 2 s limit. Its caller must be told it did not run,
and it must never start, not even once the pool's threads come free.
"""

from __future__ import annotations

import http.client
import json
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from support.paths import FIXTURES
from support.servers import Server, host_serve
from support.waiting import wait_until
from support.wire import HEADERS

pytestmark = pytest.mark.served

TENANTS = FIXTURES / "tenants"
VERSION = "2026-07-28"
#: One worker's handler threads (host.machine.timing.Runner).
POOL = 256
#: How long each hanging act holds its thread: past the probe's 2 s limit, with room for load.
HANG_S = 12


@pytest.fixture
def served(tmp_path: Path) -> Iterator[tuple[Server, Path]]:
    acts = tmp_path / "acts"
    acts.touch()
    with host_serve(
        tmp_path, "host", "--workers", "1", specs=TENANTS / "specs",
        handlers=TENANTS / "handlers", TENANTS_ACTS=str(acts),
    ) as server:  # fmt: skip
        yield server, acts


def hang(server: Server, seconds: float) -> dict[str, Any]:
    """One modern call of the ``hang`` tool on a new connection: its JSON-RPC result."""
    params = {
        "name": "hang",
        "arguments": {"seconds": seconds},
        "_meta": {
            "io.modelcontextprotocol/protocolVersion": VERSION,
            "io.modelcontextprotocol/clientCapabilities": {},
        },
    }
    body = {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": params}
    headers = {**HEADERS, "MCP-Protocol-Version": VERSION, "Mcp-Method": "tools/call",
               "Mcp-Name": "hang"}  # fmt: skip
    conn = http.client.HTTPConnection("127.0.0.1", server.port, timeout=60)
    try:
        conn.request("POST", "/mcp", json.dumps(body), headers)
        response = conn.getresponse()
        payload = json.loads(response.read())
        assert response.status == 200, payload
        result: dict[str, Any] = payload["result"]
        return result
    finally:
        conn.close()


def started(acts: Path) -> int:
    return len(acts.read_text().splitlines())


def test_an_act_told_it_did_not_run_never_starts_later(served: tuple[Server, Path]) -> None:
    server, acts = served
    told: list[dict[str, Any]] = []
    since = time.monotonic()
    hangers = [
        threading.Thread(target=lambda: told.append(hang(server, HANG_S))) for _ in range(POOL)
    ]
    for thread in hangers:
        thread.start()
    try:
        assert wait_until(lambda: started(acts) == POOL, 30), started(acts)
        began = time.monotonic()
        late = hang(server, 0)
        assert time.monotonic() - began < HANG_S / 2  # told at its limit, not once a thread freed
        assert late["isError"] is True, late
        text = late["content"][0]["text"]
        assert "did not run" in text and "will not start later" in text, text
    finally:
        for thread in hangers:
            thread.join(HANG_S + 30)
    assert len(told) == POOL and all("still running" in t["content"][0]["text"] for t in told)
    # once the hanging acts return, the pool's threads are free: the dropped act must not have
    # been waiting for one
    time.sleep(max(0.0, since + HANG_S + 3 - time.monotonic()))
    assert started(acts) == POOL
    again = hang(server, 0)  # and the pool works: a new call's act runs at once
    assert again.get("isError") is not True, again
    assert started(acts) == POOL + 1
