"""At most once, whatever fails: acts against real servers, killed workers and a stopped Redis.

Each test runs ``host serve`` with two workers and a tool whose act writes a line to a file when it
starts (with the worker's pid) and when it ends, so the test can see how often it ran. The client
is a plain HTTP client sending the final round again as any client would.
"""

from __future__ import annotations

import json
import os
import signal
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from support.modern import call
from support.redis import RedisServer
from support.servers import Server, host_serve
from support.waiting import wait_until

pytestmark = pytest.mark.served

SPECS = """
kind: server
name: faults
version: "1"
elicitation: {enabled: true}
---
kind: tool
name: work
description: Works for a while after a yes.
input: {properties: {seconds: {type: number}, label: {type: string}}, required: [seconds, label]}
steps:
  - confirm: go
    message: Work {{ seconds }} seconds on {{ label }}?
  - act: w:work
    timeout: 1s
"""

HANDLERS = """
import os, time

def work(seconds, label):
    path = os.path.join(os.environ["HOST_DATA_DIR"], "runs")
    with open(path, "a") as f:
        f.write(f"start {label} {os.getpid()}\\n")
    time.sleep(seconds)
    with open(path, "a") as f:
        f.write(f"end {label}\\n")
    return {"worked": seconds, "label": label}
"""

YES = {"go": {"action": "accept", "content": {"confirm": True}}}


@pytest.fixture
def project(tmp_path: Path) -> Path:
    (tmp_path / "specs").mkdir()
    (tmp_path / "handlers").mkdir()
    (tmp_path / "specs" / "work.yaml").write_text(SPECS)
    (tmp_path / "handlers" / "w.py").write_text(HANDLERS)
    return tmp_path / "specs"


def runs(data: Path, label: str) -> list[list[str]]:
    path = data / "runs"
    lines = path.read_text().splitlines() if path.exists() else []
    return [line.split() for line in lines if line.split()[1] == label]


def first_round(server: Server, arguments: dict[str, Any]) -> str:
    result = call(server.connect(), "work", arguments)
    assert result["resultType"] == "input_required"
    state: str = result["requestState"]
    return state


def final(server: Server, arguments: dict[str, Any], state: str) -> dict[str, Any]:
    return call(server.connect(), "work", arguments, inputResponses=YES, requestState=state)


@pytest.fixture
def serving(tmp_path: Path, project: Path) -> Iterator[Server]:
    with host_serve(tmp_path, "host", "--workers", "2", specs=project) as server:
        yield server


def test_an_act_past_its_limit_keeps_running_and_a_retry_gets_its_result(
    serving: Server, tmp_path: Path
) -> None:
    data, arguments = tmp_path / "host", {"seconds": 3, "label": "slow"}
    state = first_round(serving, arguments)
    started = time.monotonic()
    first = final(serving, arguments, state)
    assert time.monotonic() - started < 2.5
    assert first["isError"] is True
    assert "is still running after 1 seconds" in first["content"][0]["text"]
    assert "Send the same final request again" in first["content"][0]["text"]
    # A retry waits a little for the act, then says it is still running (or has its result).
    again = final(serving, arguments, state)
    if again.get("isError"):
        assert "still running" in again["content"][0]["text"]
    assert wait_until(lambda: len(runs(data, "slow")) == 2, 15)
    done = final(serving, arguments, state)
    assert done["structuredContent"] == {"worked": 3, "label": "slow"}
    assert [r[0] for r in runs(data, "slow")] == ["start", "end"]  # once


def test_a_killed_worker_mid_act_is_reported_within_seconds_never_run_twice(
    serving: Server, tmp_path: Path
) -> None:
    data, arguments = tmp_path / "host", {"seconds": 30, "label": "doomed"}
    state = first_round(serving, arguments)
    conn = serving.connect()
    body = json.dumps(
        {
            "jsonrpc": "2.0",
            "id": 2,
            "method": "tools/call",
            "params": {
                "name": "work",
                "arguments": arguments,
                "inputResponses": YES,
                "requestState": state,
                "_meta": {
                    "io.modelcontextprotocol/protocolVersion": "2026-07-28",
                    "io.modelcontextprotocol/clientCapabilities": {"elicitation": {}},
                },
            },
        }
    )
    headers = {
        "Content-Type": "application/json",
        "Accept": "application/json, text/event-stream",
        "MCP-Protocol-Version": "2026-07-28",
        "Mcp-Method": "tools/call",
        "Mcp-Name": "work",
    }
    conn.request("POST", "/mcp", body, headers)
    assert wait_until(lambda: bool(runs(data, "doomed")), 15)
    ((_, _, pid),) = runs(data, "doomed")
    os.kill(int(pid), signal.SIGKILL)
    started = time.monotonic()
    report = final(serving, arguments, state)
    waited = time.monotonic() - started
    assert waited < 12, waited  # the lease (5 s) and a short wait, not 60 s
    assert report["isError"] is True
    text = report["content"][0]["text"]
    assert "started, but its outcome is unknown" in text and "incident" in text
    again = final(serving, arguments, state)
    assert again["content"] == report["content"]  # the same incident every time
    time.sleep(1)  # the scenario: a while with no restart of the killed act
    assert runs(data, "doomed") == [["start", "doomed", pid]]


@pytest.fixture
def with_redis(
    tmp_path: Path, project: Path, redis_server: Callable[..., RedisServer]
) -> Iterator[tuple[Server, RedisServer]]:
    redis = redis_server("--appendonly", "yes", "--appendfsync", "always")
    with host_serve(
        tmp_path, "host", "--workers", "2", specs=project, HOST_STORE=redis.url
    ) as server:
        yield server, redis


def test_redis_stopped_while_an_act_runs(
    with_redis: tuple[Server, RedisServer], tmp_path: Path
) -> None:
    server, redis = with_redis
    data, arguments = tmp_path / "host", {"seconds": 0.8, "label": "cut"}
    state = first_round(server, arguments)
    conn = server.connect()
    conn.request(
        "POST",
        "/mcp",
        json.dumps(
            {
                "jsonrpc": "2.0",
                "id": 3,
                "method": "tools/call",
                "params": {
                    "name": "work",
                    "arguments": arguments,
                    "inputResponses": YES,
                    "requestState": state,
                    "_meta": {
                        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
                        "io.modelcontextprotocol/clientCapabilities": {"elicitation": {}},
                    },
                },
            }
        ),
        {
            "Content-Type": "application/json",
            "MCP-Protocol-Version": "2026-07-28",
            "Mcp-Method": "tools/call",
            "Mcp-Name": "work",
        },
    )
    assert wait_until(lambda: bool(runs(data, "cut")), 15)
    redis.stop()
    response = conn.getresponse()
    payload = json.loads(response.read())
    # The act ran to its end: this caller gets its result, not a 500.
    assert response.status == 200, payload
    assert payload["result"]["structuredContent"] == {"worked": 0.8, "label": "cut"}
    redis.start()
    report = final(server, arguments, state)
    assert report["isError"] is True
    assert "its outcome is unknown" in report["content"][0]["text"]
    assert [r[0] for r in runs(data, "cut")] == ["start", "end"]  # never a second run
    lost = [line for line in server.log_lines("act_unrecorded")]
    assert lost and lost[0]["tool"] == "work"


def test_a_redis_that_forgets_is_refused_unless_acknowledged(
    tmp_path: Path, project: Path, redis_server: Callable[..., RedisServer]
) -> None:
    volatile = redis_server()  # --save '' --appendonly no
    import subprocess
    import sys

    env = {k: v for k, v in os.environ.items() if not k.startswith("HOST_")}
    refused = subprocess.run(
        [sys.executable, "-m", "host", "serve", "--specs", str(project)],
        env={**env, "HOST_STORE": volatile.url, "HOST_DATA_DIR": str(tmp_path / "d")},
        capture_output=True, text=True, cwd=tmp_path, timeout=60,
    )  # fmt: skip
    assert refused.returncode == 1
    assert "not serving" in refused.stderr and "HOST_STORE_VOLATILE_OK=1" in refused.stderr
    assert "Traceback" not in refused.stderr
    with host_serve(
        tmp_path, "acknowledged", specs=project, HOST_STORE=volatile.url, HOST_STORE_VOLATILE_OK="1"
    ) as server:
        assert call(server.connect(), "work", {"seconds": 0, "label": "x"})["resultType"]
