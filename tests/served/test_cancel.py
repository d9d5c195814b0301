"""``notifications/cancelled`` on legacy sessions: a cancelled call's late answer acts nothing.

Issue 21's row: a legacy client (the TypeScript SDK's default is a 60 s timeout) times out while
its user reads the question, sends ``notifications/cancelled``, and then the user's late "yes"
arrives. The host had acted on it (ticket closed, customer emailed) while the model was told the
call failed. Now the cancel withdraws the open question on every worker: the late answer is
accepted and ignored, the stream ends without a response, and the call's audit record says
``cancelled``. An act already running when the cancel comes is not interrupted, and its record
says the cancel came too late.

The scenario is :func:`late_answer_scenario`: a client-specific ``drive`` starts the call, lets
it time out (or cancels it) and sends the late yes; the checks are the same for every client (a
raw one over HTTP with the cancel on another worker than the question, the official Python SDK).
"""

from __future__ import annotations

import http.client
import json
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
import mcp_types
import pytest
from mcp.client.client import Client
from mcp.shared.exceptions import MCPError

from host.observers.audit import LATE_CANCEL
from host.store import open_store
from host.store.records import AuditRecord
from support.helpdesk import copy_helpdesk
from support.node import TS_PACKAGES, TS_V2_PACKAGES, run_script
from support.servers import Server, host_serve
from support.waiting import wait_until
from support.wire import send, sse
from support.workers import connections_on_two_workers, worker_of

pytestmark = pytest.mark.served

YES = {"action": "accept", "content": {"confirm": True}}
LEGACY = "2025-11-25"

SLOW_SPEC = """\
kind: tool
name: slow_close
description: Closes a ticket slowly.
input: {properties: {id: {type: string}}, required: [id]}
steps:
  - confirm: go
    message: "Close {{ id }}, slowly?"
  - act: slow:slow_close
"""

SLOW_HANDLER = """\
import os
import pathlib
import time


def slow_close(id):
    pathlib.Path(os.environ["DEFS_STARTED"], id).write_text("started")
    time.sleep(2.0)
    return {"closed": id}
"""


@dataclass
class Site:
    """The help desk (and a slow tool) under ``host serve``, two workers; its store and folder."""

    server: Server
    store: str
    started: Path

    def records(self, tool: str, ticket: str) -> list[AuditRecord]:
        """The audit records of ``tool`` for ``ticket``, once one is written (5 s at most)."""

        def read() -> list[AuditRecord]:
            store = open_store(self.store)
            try:
                found = store.audit_records(tool=tool, limit=1000)
            finally:
                store.close()
            return [r for r in found if r.arguments.get("id") == ticket]

        wait_until(lambda: bool(read()), 5)
        return read()

    def emails(self, ticket: str) -> int:
        """How many emails the help desk's outbox holds about ``ticket``."""
        session = RawSession(self.server.connect(), {})
        status, payload = session.request(self.server.connect(), "tools/call", {
            "name": "list_outbox", "arguments": {},
        })  # fmt: skip
        assert status == 200, payload
        emails = payload["result"]["structuredContent"]["emails"]
        return sum(ticket in json.dumps(email) for email in emails)


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Site]:
    folder = tmp_path_factory.mktemp("cancel")
    specs = copy_helpdesk(folder)
    (specs / "slow.yaml").write_text(SLOW_SPEC)
    (specs.parent / "handlers" / "slow.py").write_text(SLOW_HANDLER)
    started = folder / "started"
    started.mkdir()
    with host_serve(
        folder, "host", "--workers", "2", "--threads", "8", specs=specs, DEFS_STARTED=str(started)
    ) as server:
        yield Site(server, f"sqlite:///{folder / 'host' / 'store.db'}", started)


class RawSession:
    """A raw legacy session with form elicitation; its messages go over the connection named."""

    def __init__(self, conn: http.client.HTTPConnection, caps: Any) -> None:
        params = {"protocolVersion": LEGACY, "capabilities": caps, "clientInfo": {"name": "raw"}}
        response = send(conn, {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": params})
        assert response.status == 200
        self.id = response.getheader("Mcp-Session-Id") or ""
        response.read()

    def send(self, conn: http.client.HTTPConnection, body: Any) -> http.client.HTTPResponse:
        headers = {"Mcp-Session-Id": self.id, "MCP-Protocol-Version": LEGACY}
        return send(conn, body, **headers)

    def request(self, conn: http.client.HTTPConnection, method: str, params: Any) -> Any:
        response = self.send(conn, {"jsonrpc": "2.0", "id": 1, "method": method, "params": params})
        return response.status, json.loads(response.read())

    def notify(self, conn: http.client.HTTPConnection, method: str, params: Any) -> int:
        response = self.send(conn, {"jsonrpc": "2.0", "method": method, "params": params})
        response.read()
        return response.status

    def answer(self, conn: http.client.HTTPConnection, qid: str, result: Any) -> int:
        response = self.send(conn, {"jsonrpc": "2.0", "id": qid, "result": result})
        response.read()
        return response.status


def late_answer_scenario(site: Site, ticket: str, drive: Callable[[Server, str], None]) -> None:
    """``drive`` calls close_ticket for ``ticket``, gives up on it, then sends the user's yes.

    Whatever the client, the host must have acted nothing: no email about the ticket, the late
    answer accepted and ignored, and the call's audit record ``cancelled``.
    """
    before = site.emails(ticket)
    drive(site.server, ticket)
    assert wait_until(lambda: bool(site.server.log_lines("answer_ignored")), 10)
    time.sleep(0.5)  # NOTE: long enough for an act to show, had one run
    assert site.emails(ticket) == before
    [record] = site.records("close_ticket", ticket)
    assert (record.outcome, record.acted) == ("cancelled", False)


def raw_client_on_two_workers(server: Server, ticket: str) -> None:
    """The question's stream on one worker; the cancel and the late yes on the other."""
    here, there = connections_on_two_workers(server)
    assert worker_of(server, here) != worker_of(server, there)
    session = RawSession(there, {"elicitation": {"form": {}}})
    body = {
        "jsonrpc": "2.0",
        "id": 41,
        "method": "tools/call",
        "params": {"name": "close_ticket", "arguments": {"id": ticket}},
    }
    stream = session.send(here, body)
    messages = sse(stream)
    question = next(messages)
    assert question["method"] == "elicitation/create"
    cancelled = {"requestId": 41, "reason": "timed out after 60000ms"}
    assert session.notify(there, "notifications/cancelled", cancelled) == 202
    # MCP: no response to a cancelled request; the stream just ends.
    assert list(messages) == []
    assert session.answer(there, question["id"], YES) == 202


def python_sdk_client(server: Server, ticket: str) -> None:
    """The official Python SDK: a 1 s read timeout, and a user who answers after 2 s."""
    answered = anyio.Event()

    async def slow_yes(context: Any, params: Any) -> mcp_types.ElicitResult:
        await anyio.sleep(2.0)
        answered.set()
        return mcp_types.ElicitResult(action="accept", content={"confirm": True})

    async def main() -> None:
        with anyio.fail_after(30):
            url = f"http://127.0.0.1:{server.port}/mcp"
            async with Client(url, mode="legacy", elicitation_callback=slow_yes) as client:
                with pytest.raises(MCPError, match="timed out"):
                    await client.call_tool("close_ticket", {"id": ticket}, read_timeout_seconds=1)
                await answered.wait()
                await anyio.sleep(0.5)  # NOTE: the late answer's POST goes out

    anyio.run(main)


#: The TypeScript clients as users run them, with a 1 s timeout instead of the default 60 s: the
#: call times out (the client sends notifications/cancelled), then the user's yes arrives.
TS_LATE_YES = {
    "sdk-1.x": """
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { ElicitRequestSchema } from "@modelcontextprotocol/sdk/types.js";
const client = new Client({ name: "late", version: "1.0.0" },
  { capabilities: { elicitation: { form: {} } } });
const call = (params) => client.callTool(params, undefined, { timeout: 1000 });
""",
    "client-2.x": """
import { Client, StreamableHTTPClientTransport } from "@modelcontextprotocol/client";
const ElicitRequestSchema = "elicitation/create";
const client = new Client({ name: "late", version: "1.0.0" },
  { capabilities: { elicitation: { form: {} } } });
const call = (params) => client.callTool(params, { timeout: 1000 });
""",
}
TS_DRIVE = """
let answered;
const late = new Promise((resolve) => { answered = resolve; });
client.setRequestHandler(ElicitRequestSchema, async () => {
  await new Promise((resolve) => setTimeout(resolve, 2000));
  setTimeout(answered, 1000);
  return { action: "accept", content: { confirm: true } };
});
await client.connect(new StreamableHTTPClientTransport(new URL(process.env.MCP_URL)));
try {
  await call({ name: "close_ticket", arguments: { id: process.env.TICKET } });
  console.log("answered");
} catch (error) {
  console.log(`gave up: ${error.message}`);
}
await late;
await client.close();
"""


def typescript_client(packages: Path, code: str, folder: Path) -> Callable[[Server, str], None]:
    """A TypeScript client that gives up after 1 s, and whose user says yes after 2 s."""

    def drive(server: Server, ticket: str) -> None:
        done = run_script(folder, packages, code + TS_DRIVE,
                          MCP_URL=f"http://127.0.0.1:{server.port}/mcp", TICKET=ticket)  # fmt: skip
        assert done.returncode == 0, done.stderr
        assert done.stdout.startswith("gave up: "), done.stdout

    return drive


@pytest.mark.parametrize(
    ("client", "packages", "ticket"),
    [("sdk-1.x", TS_PACKAGES, "T-3"), ("client-2.x", TS_V2_PACKAGES, "T-4")],
)
def test_the_typescript_clients_cancel_on_timeout_and_their_late_answer_acts_nothing(
    site: Site, tmp_path: Path, client: str, packages: Path, ticket: str
) -> None:
    late_answer_scenario(site, ticket, typescript_client(packages, TS_LATE_YES[client], tmp_path))
    assert site.server.log_lines("call_cancelled")


def test_a_late_answer_after_a_cancel_on_another_worker_acts_nothing(site: Site) -> None:
    late_answer_scenario(site, "T-1", raw_client_on_two_workers)


@pytest.mark.filterwarnings("ignore::DeprecationWarning")
def test_the_python_sdk_cancels_on_timeout_and_its_late_answer_acts_nothing(
    site: Site, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("mcp.client.session.LATEST_HANDSHAKE_VERSION", LEGACY)
    late_answer_scenario(site, "T-2", python_sdk_client)
    assert site.server.log_lines("call_cancelled")


def test_a_cancel_during_the_act_does_not_stop_it_and_is_recorded_late(site: Site) -> None:
    here, there = connections_on_two_workers(site.server)
    session = RawSession(there, {"elicitation": {"form": {}}})
    body = {
        "jsonrpc": "2.0",
        "id": 42,
        "method": "tools/call",
        "params": {"name": "slow_close", "arguments": {"id": "S-1"}},
    }
    messages = sse(session.send(here, body))
    question = next(messages)
    assert session.answer(there, question["id"], YES) == 202
    assert wait_until(lambda: (site.started / "S-1").exists(), 10)
    assert session.notify(there, "notifications/cancelled", {"requestId": 42}) == 202
    final = next(messages)
    assert final["result"]["structuredContent"] == {"closed": "S-1"}
    [record] = site.records("slow_close", "S-1")
    assert (record.outcome, record.acted, record.note) == ("acted", True, LATE_CANCEL)
    assert record.describe()["note"] == LATE_CANCEL


def test_a_cancel_for_no_open_question_changes_nothing(site: Site) -> None:
    session = RawSession(site.server.connect(), {"elicitation": {"form": {}}})
    conn = site.server.connect()
    assert session.notify(conn, "notifications/cancelled", {"requestId": 99}) == 202
    assert session.notify(conn, "notifications/cancelled", {"requestId": True}) == 202
    assert session.notify(conn, "notifications/cancelled", {}) == 202
    assert session.answer(conn, "not-a-question", YES) == 400
    status, payload = session.request(conn, "tools/list", {})
    assert status == 200 and payload["result"]["tools"]
