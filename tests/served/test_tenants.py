"""Issue 21's rows, as the attacker: a real ``host serve`` (two workers), two principals.

``mallory`` floods the host; ``alice`` must be served meanwhile, every call under a second, and
``/healthz`` must answer. The limits are set low so that the flood is small enough for a test.
"""

from __future__ import annotations

import http.client
import json
import sqlite3
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from host.auth.tokenfile import create_token
from host.protocol.digests import principal_digest
from host.store import open_store
from support.legacy import NEWEST, Legacy
from support.paths import FIXTURES
from support.servers import Server, host_serve
from support.waiting import wait_until
from support.wire import HEADERS, Served, send

pytestmark = pytest.mark.served

TENANTS = FIXTURES / "tenants"
VERSION = "2026-07-28"
LIMITS = {
    "HOST_LIMIT_CALLS_IN_FLIGHT": "6",
    "HOST_LIMIT_HANDLER_THREADS": "4",
    "HOST_LIMIT_STREAMS_PER_SESSION": "1",
    "HOST_LIMIT_SESSIONS": "8",
}


@dataclass
class Site:
    server: Server
    tokens: dict[str, str]
    acts: Path
    data: Path


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Site]:
    folder = tmp_path_factory.mktemp("limits")
    path = folder / "tokens"
    tokens = {name: create_token(path, name, [])[0] for name in ("alice", "mallory")}
    acts = folder / "acts"
    acts.touch()
    with host_serve(
        folder, "host", "--workers", "2", specs=TENANTS / "specs",
        handlers=TENANTS / "handlers", HOST_AUTH_TOKENS=str(path), TENANTS_ACTS=str(acts),
        **LIMITS,
    ) as server:  # fmt: skip
        yield Site(server, tokens, acts, folder / "host")


def call(
    site: Site, who: str, tool: str, arguments: dict[str, Any]
) -> tuple[int, dict[str, str], dict[str, Any]]:
    """One modern tools/call on a new connection: the status, headers and JSON body."""
    params = {
        "name": tool,
        "arguments": arguments,
        "_meta": {
            "io.modelcontextprotocol/protocolVersion": VERSION,
            "io.modelcontextprotocol/clientCapabilities": {},
        },
    }
    body = {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": params}
    headers = {
        **HEADERS,
        "MCP-Protocol-Version": VERSION,
        "Mcp-Method": "tools/call",
        "Mcp-Name": tool,
        "Authorization": f"Bearer {site.tokens[who]}",
    }
    conn = http.client.HTTPConnection("127.0.0.1", site.server.port, timeout=30)
    try:
        conn.request("POST", "/mcp", json.dumps(body), headers)
        response = conn.getresponse()
        found = {k.lower(): v for k, v in response.getheaders()}
        return response.status, found, json.loads(response.read())
    finally:
        conn.close()


def flood(site: Site, stop: threading.Event, seen: list[tuple[int, dict[str, Any]]]) -> None:
    """Mallory's hanging calls, sent again as soon as each is answered, until ``stop``."""
    while not stop.is_set():
        status, headers, body = call(site, "mallory", "hang", {"seconds": 3})
        if status == 429:
            assert headers.get("retry-after") == "1"
        seen.append((status, body))


def test_one_principal_saturating_its_limits_leaves_the_others_served(site: Site) -> None:
    stop, seen = threading.Event(), []
    floods = [threading.Thread(target=flood, args=(site, stop, seen)) for _ in range(24)]
    for thread in floods:
        thread.start()
    try:
        assert wait_until(lambda: sum(1 for s, _ in seen if s == 429) >= 20, 15)
        took = []
        for n in range(20):
            started = time.monotonic()
            status, _, body = call(site, "alice", "ping", {"text": f"hello {n}"})
            took.append(time.monotonic() - started)
            assert status == 200, body
            assert body["result"]["structuredContent"] == {"size": len(f"hello {n}")}
        started = time.monotonic()
        conn = site.server.connect()
        conn.request("GET", "/healthz")
        assert conn.getresponse().status == 200
        assert time.monotonic() - started < 1
        assert max(took) < 1, took
    finally:
        stop.set()
        for thread in floods:
            thread.join(30)
    refused = [body for status, body in seen if status == 429]
    limits = {body["error"]["data"]["limit"] for body in refused}
    assert limits <= {"calls_in_flight", "handler_threads"} and limits
    assert all(body["error"]["code"] == -32029 for body in refused)
    assert all(body["id"] == 1 for body in refused)  # the refused request's own id
    # every act that started was a call answered with 200; a refused one never starts later
    time.sleep(4)
    answered = sum(1 for status, _ in seen if status == 200)
    assert len(site.acts.read_text().splitlines()) == answered


def test_a_one_megabyte_argument_is_stored_bounded(site: Site) -> None:
    text = "x" * 1_000_000
    status, _, body = call(site, "alice", "ping", {"text": text})
    assert status == 200 and body["result"]["structuredContent"] == {"size": 1_000_000}
    store = open_store(f"sqlite:///{site.data / 'store.db'}")
    try:

        def found() -> list[Any]:
            return [
                r for r in store.audit_records(tool="ping", limit=100)
                if "bounded" in r.arguments
            ]  # fmt: skip

        assert wait_until(lambda: bool(found()), 5)
        kept = found()[0].arguments["bounded"]
        assert kept["bytes"] > 1_000_000 and len(kept["sha256"]) == 64
        assert kept["prefix"].startswith('{"text":"xxx') and len(kept["prefix"]) <= 256
    finally:
        store.close()


def test_one_sessions_streams_are_capped(site: Site) -> None:
    auth = {"Authorization": f"Bearer {site.tokens['mallory']}"}
    opening = Legacy(Served(site.server.connect()), extra=auth)
    opening.initialize(NEWEST, {}, initialized=True)
    assert opening.session
    statuses, held = [], []
    for _ in range(6):
        conn = http.client.HTTPConnection("127.0.0.1", site.server.port, timeout=10)
        headers = {"Accept": "text/event-stream", "Mcp-Session-Id": opening.session, **auth}
        conn.request("GET", "/mcp", headers=headers)
        response = conn.getresponse()
        statuses.append(response.status)
        if response.status != 200:
            body = json.loads(response.read())
            assert body["error"]["data"]["limit"] == "streams_per_session"
            conn.close()
        else:
            held.append(conn)
    try:
        # one stream per session in each of the two workers, at most
        assert statuses.count(200) <= 2 and statuses.count(429) >= 4, statuses
        status, _, _ = call(site, "alice", "ping", {"text": "still served"})
        assert status == 200
    finally:
        for conn in held:
            conn.close()


def initialize(site: Site, who: str) -> tuple[int, dict[str, str], dict[str, Any]]:
    """A legacy ``initialize`` on a new connection: the status, headers and JSON body."""
    params = {"protocolVersion": NEWEST, "capabilities": {}, "clientInfo": {"name": "m"}}
    body = {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": params}
    conn = site.server.connect()
    try:
        response = send(conn, body, Authorization=f"Bearer {site.tokens[who]}")
        found = {k.lower(): v for k, v in response.getheaders()}
        return response.status, found, json.loads(response.read())
    finally:
        conn.close()


def session_request(site: Site, who: str, session: str, method: str) -> int:
    """One request of a legacy session on a new connection (``DELETE`` ends it); its status."""
    conn = site.server.connect()
    headers = {"Mcp-Session-Id": session, "Authorization": f"Bearer {site.tokens[who]}"}
    try:
        if method == "DELETE":
            conn.request("DELETE", "/mcp", headers=headers)
        else:
            body = {"jsonrpc": "2.0", "id": 1, "method": method, "params": {}}
            conn.request("POST", "/mcp", json.dumps(body), {**HEADERS, **headers})
        response = conn.getresponse()
        response.read()
        return response.status
    finally:
        conn.close()


def live_places(site: Site, who: str) -> int:
    """How many live session places ``who`` holds in the store."""
    group = "sessions:" + principal_digest(who)
    with sqlite3.connect(site.data / "store.db") as db:
        found: int = db.execute(
            "SELECT COUNT(*) FROM store_places WHERE grp = ? AND expires > ?", (group, time.time())
        ).fetchone()[0]
    return found


def test_one_principals_sessions_past_the_limit_evict_the_least_recently_used(site: Site) -> None:
    opened: list[str] = []
    for _ in range(12):
        status, headers, body = initialize(site, "mallory")
        assert status == 200, body  # never locked out
        opened.append(headers["mcp-session-id"])
    # both workers see the same places: the four oldest are gone everywhere, the eight newest kept
    assert all(session_request(site, "mallory", s, "ping") == 404 for s in opened[:4] * 2)
    assert all(session_request(site, "mallory", s, "ping") == 200 for s in opened[4:])
    assert live_places(site, "mallory") == 8
    assert initialize(site, "alice")[0] == 200
    # an ended session frees its place, and is refused by every worker from then on
    assert session_request(site, "mallory", opened[4], "DELETE") == 204
    assert all(session_request(site, "mallory", opened[4], "ping") == 404 for _ in range(4))
    assert initialize(site, "mallory")[0] == 200
    assert (
        session_request(site, "mallory", opened[5], "ping") == 200
    )  # the freed place: none evicted
    assert live_places(site, "mallory") == 8


def test_an_ended_session_leaves_no_row_behind(site: Site) -> None:
    status, headers, _ = initialize(site, "alice")
    session = headers["mcp-session-id"]
    assert status == 200
    assert session_request(site, "alice", session, "tools/list") == 200
    with sqlite3.connect(site.data / "store.db") as db:
        before = db.execute("SELECT COUNT(*) FROM store_records").fetchone()[0]
        places = db.execute("SELECT COUNT(*) FROM store_places").fetchone()[0]
    assert session_request(site, "alice", session, "DELETE") == 204
    with sqlite3.connect(site.data / "store.db") as db:
        after = db.execute("SELECT COUNT(*) FROM store_records").fetchone()[0]
        assert db.execute("SELECT COUNT(*) FROM store_places").fetchone()[0] == places - 1
    assert after == before - 1  # its tools-seen row, and no tombstone in its place
