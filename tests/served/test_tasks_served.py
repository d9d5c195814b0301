"""Long waits as MCP tasks over real HTTP: ``host serve`` with two workers on SQLite, and two
instances on one Redis, with static tokens.

``alice`` calls as a tasks client; ``bob`` approves through the approvals API; ``mallory`` is
another caller. Every act appends a line to one shared file, so acts are counted across
processes and instances. What needs no second process is in ``tests/app/test_tasks.py``.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import threading
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from host.client.wire import HttpTransport
from host.errors import HostError
from host.testing import McpClient
from support.approvals import SECRET, unique
from support.node import TS_TASKS_PACKAGES, run_script
from support.servers import Server, clean_env, host_serve
from support.tasks import EXT, TASK_CAPS, TASK_HANDLERS, TASK_SPECS, make_tokens, poll
from support.waiting import wait_until

pytestmark = pytest.mark.served

SURE = {"sure": {"action": "accept", "content": {"confirm": True}}}


@dataclass
class Site:
    servers: list[Server]
    tokens: dict[str, str]
    acts: Path
    specs: Path

    def mcp(self, who: str = "alice", index: int = 0, caps: Any = TASK_CAPS) -> McpClient:
        url = self.servers[index % len(self.servers)].url
        return McpClient(HttpTransport(url, token=self.tokens[who]), capabilities=caps)

    def api(self, who: str, method: str, path: str, body: Any = None, index: int = 0) -> Any:
        conn = self.servers[index % len(self.servers)].connect()
        headers = {
            "Authorization": f"Bearer {self.tokens[who]}",
            "Content-Type": "application/json",
        }
        conn.request(method, "/approvals/api/requests" + path,
                     None if body is None else json.dumps(body), headers)  # fmt: skip
        response = conn.getresponse()
        return response.status, json.loads(response.read() or b"null")

    def acted(self, service: str) -> list[dict[str, Any]]:
        lines = self.acts.read_text().splitlines() if self.acts.exists() else []
        return [a for a in map(json.loads, lines) if a["service"] == service]


@pytest.fixture(scope="module")
def two_workers(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Site]:
    folder = tmp_path_factory.mktemp("tasks-workers")
    tokens = make_tokens(folder / "tokens")
    specs = shutil.copytree(TASK_SPECS, folder / "specs")
    with host_serve(
        folder, "host", "--workers", "2", "--threads", "8", specs=specs, handlers=TASK_HANDLERS,
        HOST_AUTH_TOKENS=str(folder / "tokens"), OPS_ACTS=str(folder / "acts.jsonl"),
    ) as server:  # fmt: skip
        yield Site([server], tokens, folder / "acts.jsonl", specs)


@pytest.fixture(scope="module")
def two_instances(tmp_path_factory: pytest.TempPathFactory, redis_url: str) -> Iterator[Site]:
    folder = tmp_path_factory.mktemp("tasks-instances")
    tokens = make_tokens(folder / "tokens")
    specs = shutil.copytree(TASK_SPECS, folder / "specs")
    shared = {
        "HOST_SECRET": SECRET,
        "HOST_STORE": redis_url,
        "HOST_AUTH_TOKENS": str(folder / "tokens"),
        "OPS_ACTS": str(folder / "acts.jsonl"),
    }
    args = ("--workers", "1", "--threads", "8")
    with (
        host_serve(folder, "one", *args, specs=specs, handlers=TASK_HANDLERS, **shared) as one,
        host_serve(folder, "two", *args, specs=specs, handlers=TASK_HANDLERS, **shared) as two,
    ):
        yield Site([one, two], tokens, folder / "acts.jsonl", specs)


@pytest.fixture(params=["two_workers", "two_instances"])
def either(request: pytest.FixtureRequest) -> Site:
    """Each test runs on two workers over SQLite, and on two instances over Redis."""
    site: Site = request.getfixturevalue(request.param)
    return site


def _task(mcp: McpClient, tool: str, service: str) -> dict[str, Any]:
    params: dict[str, Any] = {"name": tool, "arguments": {"service": service}}
    first = mcp.send("tools/call", params).result
    if first["resultType"] == "input_required":
        params.update(inputResponses=SURE, requestState=first["requestState"])
        first = mcp.send("tools/call", params).result
    assert first["resultType"] == "task", first
    return dict(first)


def _get(mcp: McpClient, task_id: str) -> dict[str, Any]:
    response = mcp.send("tasks/get", {"taskId": task_id})
    assert response.result is not None, response
    return dict(response.result)


def test_approved_after_the_task_is_made_it_acts_once_polled_from_everywhere(
    either: Site,
) -> None:
    service = unique("web")
    made = _task(either.mcp(index=0), "restart_service", service)
    again = _task(either.mcp(index=1), "restart_service", service)
    assert again["taskId"] == made["taskId"]
    request = made["_meta"]["host/approval"]["request"]
    pollers = [either.mcp(index=i) for i in range(4)]
    assert {_get(p, made["taskId"])["status"] for p in pollers} == {"working"}

    status, body = either.api("bob", "POST", f"/{request}/approve", {"reason": "ok"}, index=1)
    assert status == 200, body

    def watch(index: int) -> dict[str, Any]:
        mine = either.mcp(index=index)  # NOTE: its own connection: threads share none
        return poll(lambda: _get(mine, made["taskId"]), lambda t: t["status"] == "completed")

    with ThreadPoolExecutor(8) as pool:
        seen = list(pool.map(watch, range(8)))
    retried = [
        either.mcp(index=i)
        .send("tools/call", {"name": "restart_service", "arguments": {"service": service}})
        .result
        for i in range(2)
    ]
    results = [t["result"]["structuredContent"] for t in seen]
    assert results == [{"restarted": service, "approved_by": ["bob"]}] * len(seen)
    assert len(either.acted(service)) == 1
    # NOTE: a retried call after the task ended is a new call: it asks again, acts on nothing
    assert all(r["resultType"] == "input_required" for r in retried)
    assert len(either.acted(service)) == 1


def test_rejected_and_expired_tasks_complete_without_acting(either: Site) -> None:
    rejected, expired = unique("db"), unique("cdn")
    alice = either.mcp(index=0)
    made = _task(alice, "restart_service", rejected)
    lapsing = _task(alice, "purge_cache", expired)
    request = made["_meta"]["host/approval"]["request"]
    assert either.api("bob", "POST", f"/{request}/reject", {"reason": "no"}, index=1)[0] == 200
    other = either.mcp(index=1)
    done = poll(lambda: _get(other, made["taskId"]), lambda t: t["status"] == "completed")
    assert done["result"]["structuredContent"] == {"done": False, "reason": "no"}
    gone = poll(lambda: _get(other, lapsing["taskId"]), lambda t: t["status"] == "completed")
    assert gone["result"]["structuredContent"]["reason"] == "Nobody decided in time."
    assert either.acted(rejected) == [] and either.acted(expired) == []


def test_cancel_before_a_decision_withdraws_the_request_and_nothing_acts(either: Site) -> None:
    service = unique("api")
    made = _task(either.mcp(index=0), "restart_service", service)
    request = made["_meta"]["host/approval"]["request"]
    other = either.mcp(index=1)
    assert other.send("tasks/cancel", {"taskId": made["taskId"]}).result["resultType"] == (
        "complete"
    )
    assert _get(either.mcp(index=0), made["taskId"])["status"] == "cancelled"
    status, body = either.api("bob", "POST", f"/{request}/approve", {}, index=0)
    assert status == 409, body
    assert either.api("bob", "GET", f"/{request}", index=1)[1]["status"] == "withdrawn"
    assert _get(other, made["taskId"])["status"] == "cancelled"
    assert either.acted(service) == []


def test_foreign_and_guessed_ids_and_clients_without_the_extension_are_refused(
    either: Site,
) -> None:
    made = _task(either.mcp(index=0), "deploy", unique("x"))
    mallory = either.mcp("mallory", index=1)
    foreign = mallory.send("tasks/get", {"taskId": made["taskId"]})
    guessed = mallory.send("tasks/cancel", {"taskId": "tsk_" + "Z" * 43})
    assert foreign.status == guessed.status == 400
    assert foreign.body["error"] == guessed.body["error"] == {
        "code": -32602, "message": "Failed to retrieve task: Task not found",
    }  # fmt: skip
    plain = either.mcp(index=1, caps={"elicitation": {"form": {}}})
    for method, params in [
        ("tasks/get", {"taskId": made["taskId"]}),
        ("tools/call", {"name": "deploy", "arguments": {"service": "y"}}),
    ]:
        refused = plain.send(method, params)
        assert refused.status == 400 and refused.body["error"]["code"] == -32021, refused
        assert refused.body["error"]["data"]["requiredCapabilities"] == {"extensions": {EXT: {}}}
    assert _get(either.mcp(index=1), made["taskId"])["status"] == "working"


def test_host_call_polls_a_task_and_prints_the_result_once_approved(two_workers: Site) -> None:
    service = unique("cli")
    argv = [sys.executable, "-m", "host", "call", "deploy", "--url", two_workers.servers[0].url,
            "--arg", f"service={service}"]  # fmt: skip
    env = clean_env(HOST_TOKEN=two_workers.tokens["alice"])
    with subprocess.Popen(
        argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        text=True, env=env,
    ) as call:  # fmt: skip
        assert call.stderr is not None
        line = call.stderr.readline()
        assert line.startswith("host call: Waiting for 1 approval from someone holding "), line
        request = line.split("(request ", 1)[1].split(",")[0]
        assert two_workers.api("bob", "POST", f"/{request}/approve", {"reason": "ok"})[0] == 200
        out, err = call.communicate(timeout=60)
    assert call.returncode == 0, err
    assert json.loads(out) == {"restarted": service, "approved_by": ["bob"]}
    assert len(two_workers.acted(service)) == 1


#: The tasks extension's TypeScript requester (0.2.x) over the official client 2.x, pinned to
#: 2026-07-28: it gets a task for the approval, polls it, and prints the act's result.
TS_TASKS_SCRIPT = """
import { Client, StreamableHTTPClientTransport } from "@modelcontextprotocol/client";
import {
  createTaskSessionFromClient,
  resultFromTaskOutcome,
} from "@modelcontextprotocol/ext-tasks/client";

const url = new URL(process.env.MCP_URL);
const auth = { Authorization: `Bearer ${process.env.HOST_TOKEN}` };
const capabilities = {
  elicitation: { form: {} },
  extensions: { "io.modelcontextprotocol/tasks": {} },
};
const clientInfo = { name: "tasks-test", version: "1.0.0" };
const transport = new StreamableHTTPClientTransport(url, { requestInit: { headers: auth } });
const client = new Client(clientInfo, {
  capabilities,
  versionNegotiation: { mode: { pin: "2026-07-28" } },
});
await client.connect(transport);

// NOTE: the SDK's own codecs do not carry tasks/* on 2026-07-28: the package asks its host
// application for a raw request path, here a plain POST with the routing headers.
let lastId = 0;
const seen = [];
async function rawDispatch(request, options) {
  const params = request.params ?? {};
  const name = request.method === "tools/call" ? params.name : params.taskId;
  const headers = {
    ...auth,
    "Content-Type": "application/json",
    Accept: "application/json, text/event-stream",
    "MCP-Protocol-Version": "2026-07-28",
    "Mcp-Method": request.method,
  };
  if (typeof name === "string") headers["Mcp-Name"] = name;
  const framed = { jsonrpc: "2.0", id: ++lastId, ...request };
  const response = await fetch(url, {
    method: "POST", headers, body: JSON.stringify(framed), signal: options?.signal,
  });
  const body = await response.json();
  seen.push(`${request.method}:${body.result?.resultType}:${body.result?.status ?? ""}`);
  return body;
}

const session = createTaskSessionFromClient(client, {
  endpointId: "tasks-test",
  rawDispatch,
  v2RequestFraming: { protocolVersion: "2026-07-28", clientInfo, clientCapabilities: capabilities },
});
try {
  const execution = await session.callTool(process.env.TOOL, { service: process.env.SERVICE });
  const { outcome } = await execution.settle();
  const result = resultFromTaskOutcome(outcome);
  console.log(JSON.stringify(seen));
  console.log(JSON.stringify(result.structuredContent));
} finally {
  await session.close();
  await client.close();
}
"""


def _approve_when_asked(site: Site, service: str) -> threading.Thread:
    def approve() -> None:
        found = poll(
            lambda: {"r": site.api("bob", "GET", "?status=pending")[1]["requests"]},
            lambda seen: any(r["arguments"].get("service") == service for r in seen["r"]),
            timeout=60,
        )["r"]
        (request,) = [r for r in found if r["arguments"].get("service") == service]
        site.api("bob", "POST", f"/{request['id']}/approve", {"reason": "ok"})

    thread = threading.Thread(target=approve, daemon=True)
    thread.start()
    return thread


def test_the_typescript_tasks_requester_gets_a_task_and_the_result_once_approved(
    two_workers: Site, tmp_path: Path
) -> None:
    service = unique("ts")
    approver = _approve_when_asked(two_workers, service)
    done = run_script(
        tmp_path, TS_TASKS_PACKAGES, TS_TASKS_SCRIPT, HOST_TOKEN=two_workers.tokens["alice"],
        MCP_URL=f"{two_workers.servers[0].url}/mcp", TOOL="deploy", SERVICE=service,
    )  # fmt: skip
    approver.join(10)
    assert done.returncode == 0, done.stderr
    seen, result = done.stdout.strip().splitlines()[-2:]
    assert json.loads(seen)[0] == "tools/call:task:working"
    assert json.loads(seen)[-1] == "tasks/get:complete:completed"
    assert json.loads(result) == {"restarted": service, "approved_by": ["bob"]}
    assert len(two_workers.acted(service)) == 1


def test_fastmcp_with_fastmcp_tasks_gets_a_task_and_the_result_once_approved(
    two_workers: Site,
) -> None:
    import anyio
    import fastmcp_tasks  # noqa: F401  (registers the tasks extension on every fastmcp Client)
    import httpx2
    from fastmcp import Client
    from fastmcp.client.transports import StreamableHttpTransport

    class TaskNamed(httpx2.Auth):
        """The bearer token, and the ``Mcp-Name`` header of ``tasks/*`` (fastmcp-tasks 4.1.4
        sends none, and the host refuses such a request with -32020 as the extension says)."""

        def __init__(self, token: str) -> None:
            self.token = token

        def auth_flow(self, request: Any) -> Any:
            request.headers["Authorization"] = f"Bearer {self.token}"
            if request.headers.get("mcp-method", "").startswith("tasks/"):
                task_id = (json.loads(request.content or b"{}").get("params") or {}).get("taskId")
                if isinstance(task_id, str) and "mcp-name" not in request.headers:
                    request.headers["Mcp-Name"] = task_id
            yield request

    service = unique("fastmcp")
    approver = _approve_when_asked(two_workers, service)

    async def main() -> Any:
        url = f"{two_workers.servers[0].url}/mcp"
        transport = StreamableHttpTransport(url, auth=TaskNamed(two_workers.tokens["alice"]))
        with anyio.fail_after(60):
            async with Client(transport) as client:
                # NOTE: deploy is task: required: only a call that declared the extension runs
                result = await client.call_tool("deploy", {"service": service})
                return result.structured_content

    assert anyio.run(main) == {"restarted": service, "approved_by": ["bob"]}
    approver.join(10)
    assert len(two_workers.acted(service)) == 1


def test_a_reload_that_changes_the_tool_voids_a_waiting_task(either: Site) -> None:
    service = unique("drain")
    made = _task(either.mcp(index=0), "drain_node", service)
    spec = either.specs / "ops.yaml"
    spec.write_text(spec.read_text().replace("asks to drain", "wants to drain"))
    reloads = [len(s.log_lines("specs_reloaded")) for s in either.servers]
    for server in either.servers:
        os.kill(server.pid, signal.SIGHUP)
    for server, before in zip(either.servers, reloads, strict=True):
        assert wait_until(lambda s=server, n=before: len(s.log_lines("specs_reloaded")) > n)

    def fresh() -> dict[str, Any]:
        # NOTE: a new connection each time: the old workers close theirs as they stop.
        try:
            return _get(either.mcp(index=1), made["taskId"])
        except HostError:
            return {"status": "unreachable"}

    done = poll(fresh, lambda t: t["status"] == "completed", timeout=30)
    assert done["result"]["isError"] is True, done
    assert done["result"]["_meta"]["host/approval"]["status"] == "voided"
    assert "changed" in done["result"]["content"][0]["text"]
    request = made["_meta"]["host/approval"]["request"]
    assert either.api("bob", "POST", f"/{request}/approve", {}, index=0)[0] == 409
    assert either.acted(service) == []


def test_a_url_ask_as_a_task_goes_on_once_its_page_is_submitted(either: Site) -> None:
    from support.asks import HttpBrowser

    service = unique("key")
    alice = either.mcp(index=0)
    params = {"name": "rotate_key", "arguments": {"service": service}}
    made = alice.send("tools/call", params).result
    assert made["resultType"] == "task" and made["status"] == "input_required", made
    other = either.mcp(index=1)
    asked = _get(other, made["taskId"])["inputRequests"]["credentials"]["params"]
    assert asked["mode"] == "url"
    update = {"taskId": made["taskId"], "inputResponses": {"credentials": {"action": "accept"}}}
    assert other.send("tasks/update", update).result["resultType"] == "complete"
    browser = HttpBrowser(either.servers[0].url).sign_in(either.tokens["alice"])
    browser.submit(asked["url"], {"api_key": "a-served-key-0123"})
    done = poll(lambda: _get(other, made["taskId"]), lambda t: t["status"] == "completed")
    assert done["result"]["structuredContent"]["rotated"] is True, done
    assert len(either.acted(service)) == 1
