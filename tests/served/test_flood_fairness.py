"""Fairness under a flood, against a real ``host serve``: while one principal holds 300 calls of
a hanging act (64 running per worker, the rest refused with 429 and sent again at once, on
kept-alive connections), another principal's every call, each on a new connection, is answered
within a second.

Another principal's call used to wait behind the flooder's queue of refusals for the worker's
few turns (0.7-0.9 s here, 1.2 s measured in the field): a connection refused over its limits
now queues its next request behind every other. Bounded: acts that hang 1 s, a few seconds of
flood, the flooder in a process of its own (so the measured latency is the server's).
"""

from __future__ import annotations

import http.client
import json
import multiprocessing
import threading
import time
from collections import Counter
from collections.abc import Iterator
from multiprocessing.queues import Queue
from multiprocessing.synchronize import Event

import pytest

from host.auth.tokenfile import create_token
from support.servers import Server, host_serve

pytestmark = pytest.mark.served

VERSION = "2026-07-28"
SPECS = """\
kind: server
name: flood
---
kind: tool
name: hang
description: An act that hangs for as many seconds as asked.
input: {properties: {seconds: {type: number}}, required: [seconds]}
steps:
  - act: flood:hang
    timeout: 5s
---
kind: tool
name: ping
description: Answers at once.
input: {properties: {text: {type: string}}, required: [text]}
steps:
  - act: flood:ping
"""
HANDLERS = """\
import time


def hang(seconds):
    time.sleep(seconds)
    return {"slept": seconds}


def ping(text):
    return {"size": len(text)}
"""
CTX = multiprocessing.get_context("fork")
#: Flooding connections, and how long each act hangs.
FLOODERS, HANG_S = 300, 1.0


@pytest.fixture(scope="module")
def flooded(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Server, dict[str, str]]]:
    folder = tmp_path_factory.mktemp("flood")
    (folder / "specs").mkdir()
    (folder / "handlers").mkdir()
    (folder / "specs" / "flood.yaml").write_text(SPECS)
    (folder / "handlers" / "flood.py").write_text(HANDLERS)
    tokens = {name: create_token(folder / "tokens", name, [])[0] for name in ("alice", "mallory")}
    with host_serve(
        folder, "host", "--workers", "2", specs=folder / "specs",
        HOST_AUTH_TOKENS=str(folder / "tokens"),
    ) as server:  # fmt: skip
        yield server, tokens


def _call(conn: http.client.HTTPConnection, token: str, tool: str, arguments: dict) -> int:
    params = {
        "name": tool,
        "arguments": arguments,
        "_meta": {
            "io.modelcontextprotocol/protocolVersion": VERSION,
            "io.modelcontextprotocol/clientCapabilities": {},
        },
    }
    body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": params})
    headers = {"Content-Type": "application/json", "Accept": "application/json",
               "MCP-Protocol-Version": VERSION, "Mcp-Method": "tools/call", "Mcp-Name": tool,
               "Authorization": f"Bearer {token}"}  # fmt: skip
    conn.request("POST", "/mcp", body, headers)
    response = conn.getresponse()
    response.read()
    return response.status


def _flood(port: int, token: str, stop: Event, counts: Queue[dict[int, int]]) -> None:
    """Mallory, in a process of its own: FLOODERS connections sending the hanging call again
    as soon as each is answered."""
    seen: Counter[int] = Counter()

    def one() -> None:
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
        while not stop.is_set():
            try:
                seen[_call(conn, token, "hang", {"seconds": HANG_S})] += 1
            except OSError:
                conn.close()
                conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
        conn.close()

    threads = [threading.Thread(target=one, daemon=True) for _ in range(FLOODERS)]
    for thread in threads:
        thread.start()
    while not stop.wait(0.1):
        counts.put(dict(seen))
    for thread in threads:
        thread.join(10)
    counts.put(dict(seen))


def test_another_principals_every_call_is_answered_within_a_second(
    flooded: tuple[Server, dict[str, str]],
) -> None:
    server, tokens = flooded
    stop = CTX.Event()
    counts: Queue[dict[int, int]] = CTX.Queue()
    mallory = CTX.Process(target=_flood, args=(server.port, tokens["mallory"], stop, counts))
    mallory.start()
    took: list[float] = []
    seen: dict[int, int] = {}
    try:
        deadline = time.monotonic() + 15
        while seen.get(429, 0) < FLOODERS and time.monotonic() < deadline:
            seen = counts.get(timeout=15)  # until the flood holds its share and is refused
        assert seen.get(429, 0) >= FLOODERS, seen
        ends = time.monotonic() + 2.5 * HANG_S  # through bursts of the acts' starts
        n = 0
        while time.monotonic() < ends:
            conn = server.connect()  # NOTE: a first call each time, on a new connection
            started = time.monotonic()
            assert _call(conn, tokens["alice"], "ping", {"text": str(n)}) == 200
            took.append(time.monotonic() - started)
            conn.close()
            n += 1
            time.sleep(0.05)
    finally:
        stop.set()
        mallory.join(20)
    assert len(took) >= 10, took
    assert max(took) < 1.0, sorted(took)[-5:]
