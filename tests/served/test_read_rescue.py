"""A read on its request's own thread, stuck past its limit, is answered at the limit anyway.

``host serve``'s worker runs a round's reads on the request's thread (``host.machine.watchdog``):
when one outruns its limit, the request is run again on another thread with that read timed out,
and that run answers. The guarantees, against a real ``host serve``:

- the client has its answer at the limit, the same as when the read ran on the pool, and the
  connection is closed after it;
- the round is logged and its act decided once: the stuck run, when its read returns at last,
  neither logs, nor audits, nor acts;
- other calls are served meanwhile, and a caller's stuck reads still count against its share of
  handler threads (one tenant cannot take them all);
- a legacy session's call and a reload mid-read keep the same promises.
"""

from __future__ import annotations

import http.client
import json
import os
import signal
import socket
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from host.auth.tokenfile import create_token
from support.legacy import NEWEST
from support.servers import Server, host_serve
from support.waiting import wait_until

pytestmark = pytest.mark.served

VERSION = "2026-07-28"
SPECS = """
kind: server
name: slow
version: "1"
timeouts: {read: 300ms}
---
kind: tool
name: lookup
description: Looks something up slowly, then notes what it found.
input: {properties: {seconds: {type: number}}, required: [seconds]}
steps:
  - read: value
    call: s:slow
  - act: s:note
"""
HANDLERS = """
import os, time

def slow(seconds):
    time.sleep(seconds)
    return seconds

def note(value):
    with open(os.environ["SLOW_NOTES"], "a") as notes:
        notes.write(f"{value}\\n")
    return {"value": value}
"""
STUCK = "The tool lookup stopped: looking up value took longer than 0.3 seconds."


@dataclass
class Site:
    server: Server
    notes: Path
    tokens: dict[str, str]


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Site]:
    folder = tmp_path_factory.mktemp("rescue")
    (folder / "specs").mkdir()
    (folder / "handlers").mkdir()
    (folder / "specs" / "slow.yaml").write_text(SPECS)
    (folder / "handlers" / "s.py").write_text(HANDLERS)
    notes = folder / "notes"
    notes.touch()
    path = folder / "tokens"
    tokens = {name: create_token(path, name, [])[0] for name in ("alice", "mallory", "eve")}
    with host_serve(
        folder, "host", "--workers", "1", specs=folder / "specs", handlers=folder / "handlers",
        SLOW_NOTES=str(notes), HOST_AUTH_TOKENS=str(path), HOST_LIMIT_HANDLER_THREADS="2",
    ) as server:  # fmt: skip
        yield Site(server, notes, tokens)


def request(seconds: float, token: str) -> bytes:
    """The raw HTTP request of a modern ``lookup`` call, kept alive."""
    params = {
        "name": "lookup",
        "arguments": {"seconds": seconds},
        "_meta": {
            "io.modelcontextprotocol/protocolVersion": VERSION,
            "io.modelcontextprotocol/clientCapabilities": {},
        },
    }
    body = json.dumps({"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": params})
    head = (
        "POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
        "Accept: application/json, text/event-stream\r\n"
        f"MCP-Protocol-Version: {VERSION}\r\nMcp-Method: tools/call\r\nMcp-Name: lookup\r\n"
        f"Authorization: Bearer {token}\r\nContent-Length: {len(body)}\r\n\r\n"
    )
    return head.encode() + body.encode()


def call(
    site: Site, seconds: float, who: str = "alice", closing: bool = False
) -> tuple[float, int, Any, bool | None]:
    """One call on a new kept-alive connection: seconds taken, status, the JSON body, and (with
    ``closing``) whether the server closed the connection after it, within a second."""
    with socket.create_connection(("127.0.0.1", site.server.port), timeout=15) as sock:
        started = time.monotonic()
        sock.sendall(request(seconds, site.tokens[who]))
        response = http.client.HTTPResponse(sock)
        response.begin()
        body = json.loads(response.read())
        took = time.monotonic() - started
        closed = None
        if closing:
            sock.settimeout(1)
            try:
                closed = sock.recv(1) == b""
            except TimeoutError:
                closed = False
        return took, response.status, body, closed


def test_a_stuck_read_is_answered_at_its_limit_and_its_round_ends_once(site: Site) -> None:
    before = len(site.server.calls())
    took, status, body, closed = call(site, 2, closing=True)
    assert status == 200
    assert took < 1.5, took
    result = body["result"]
    assert result["isError"] is True
    assert result["content"][0]["text"].startswith(STUCK)
    assert (
        closed is True
    )  # NOTE: the stuck run still holds its thread: nothing more on this connection
    # the read returns 2 s in: its run ends without a word, and its act never runs
    time.sleep(2.5)
    ended = site.server.calls()[before:]
    assert [(c["tool"], c["outcome"]) for c in ended] == [("lookup", "error")]
    warned = [
        line for line in _lines(site.server)
        if line.get("message") == "a read ran past its time limit"
    ]  # fmt: skip
    assert len(warned) == 1
    assert site.notes.read_text() == ""
    took, status, body, closed = call(site, 0, closing=True)
    assert body["result"]["structuredContent"] == {"value": 0}
    assert closed is False  # NOTE: a call answered on its own thread keeps its connection
    assert site.notes.read_text() == "0\n"


def test_other_calls_are_served_while_reads_are_stuck(site: Site) -> None:
    stuck = threading.Thread(target=call, args=(site, 3, "mallory"))
    stuck.start()
    try:
        time.sleep(0.1)
        for _ in range(10):
            took, status, body, _ = call(site, 0)
            assert status == 200 and not body["result"].get("isError"), body
            assert took < 1, took
    finally:
        stuck.join(10)


def test_stuck_reads_hold_their_callers_share_until_they_return(site: Site) -> None:
    answered: list[tuple[float, int, Any, bool | None]] = []
    stuck = [
        threading.Thread(target=lambda: answered.append(call(site, 3, "eve"))) for _ in range(2)
    ]
    for thread in stuck:
        thread.start()
    for thread in stuck:
        thread.join(10)
    assert [(status, body["result"]["isError"]) for _, status, body, _ in answered] == [
        (200, True),
        (200, True),
    ]
    # both reads still run, past their limits: eve's share (2) is taken, alice's is not
    _, status, body, _ = call(site, 0, "eve")
    assert status == 429 and body["error"]["data"]["limit"] == "handler_threads", body
    _, status, body, _ = call(site, 0, "alice")
    assert status == 200 and body["result"]["structuredContent"] == {"value": 0}
    assert wait_until(lambda: call(site, 0, "eve")[1] == 200, 5, 0.2)


def test_a_legacy_sessions_stuck_read_is_answered_at_its_limit(site: Site) -> None:
    session = _legacy_session(site)
    started = time.monotonic()
    payload = _legacy_call(site, session, 2)
    assert time.monotonic() - started < 1.5
    assert payload["result"]["isError"] is True
    assert payload["result"]["content"][0]["text"].startswith(STUCK)
    time.sleep(2.5)
    assert site.notes.read_text().count("2") == 0


def test_a_reload_while_a_read_is_stuck_still_answers_it(site: Site) -> None:
    answered: list[tuple[float, int, Any, bool | None]] = []
    stuck = threading.Thread(target=lambda: answered.append(call(site, 2)))
    stuck.start()
    time.sleep(0.1)
    os.kill(site.server.pid, signal.SIGHUP)
    stuck.join(10)
    ((took, status, body, _),) = answered
    assert status == 200 and took < 1.5, (took, body)
    assert body["result"]["content"][0]["text"].startswith(STUCK)
    assert wait_until(lambda: call(site, 0)[1] == 200, 10, 0.2)


def _legacy_session(site: Site) -> str:
    """A new legacy session of alice's (initialized); its id."""
    params = {
        "protocolVersion": NEWEST,
        "capabilities": {},
        "clientInfo": {"name": "t", "version": "1"},
    }
    response, _ = _legacy_post(
        site, None, {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": params}
    )
    session = response.getheader("Mcp-Session-Id")
    assert session
    done = {"jsonrpc": "2.0", "method": "notifications/initialized"}
    _legacy_post(site, session, done, protocol=NEWEST)
    return session


def _legacy_post(
    site: Site, session: str | None, body: Any, protocol: str | None = None
) -> tuple[http.client.HTTPResponse, str]:
    conn = site.server.connect()
    headers = {
        "Content-Type": "application/json",
        "Accept": "application/json, text/event-stream",
        "Authorization": f"Bearer {site.tokens['alice']}",
    }
    if session is not None:
        headers["Mcp-Session-Id"] = session
    if protocol is not None:
        headers["MCP-Protocol-Version"] = protocol
    conn.request("POST", "/mcp", json.dumps(body), headers)
    response = conn.getresponse()
    return response, response.read().decode()


def _legacy_call(site: Site, session: str, seconds: float) -> dict[str, Any]:
    body = {
        "jsonrpc": "2.0",
        "id": 3,
        "method": "tools/call",
        "params": {"name": "lookup", "arguments": {"seconds": seconds}},
    }
    response, text = _legacy_post(site, session, body, protocol=NEWEST)
    assert response.status == 200, text
    if text.startswith("{"):
        payload: dict[str, Any] = json.loads(text)
        return payload
    data = [line[len("data: ") :] for line in text.splitlines() if line.startswith("data: ")]
    found: dict[str, Any] = json.loads(data[-1])
    return found


def _lines(server: Server) -> list[dict[str, Any]]:
    return [json.loads(raw) for raw in server.log.read_text().splitlines() if raw.startswith("{")]
