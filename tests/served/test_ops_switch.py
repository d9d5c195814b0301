"""The elicitation kill switch, from the spec and from the environment, on a real ``host serve``.

With ``elicitation: {enabled: false}`` written in the server spec, or ``HOST_ELICITATION=off`` for
the deployment, every call that needs to ask gets ELICITATION_DISABLED (-31001, ``data.type``),
in both eras and on both workers, nothing is done, and tools that finish without asking still
work. Legacy sessions without forms are no longer offered the fallback tool.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from host.protocol.jsonrpc import ELICITATION_DISABLED
from support.helpdesk import copy_helpdesk
from support.legacy import LegacyHttp
from support.paths import ROOT
from support.servers import Server, clean_env, host_serve
from support.waiting import wait_until
from support.wire import send
from support.workers import connections_on_two_workers

pytestmark = pytest.mark.served

CAPABLE = {"elicitation": {"form": {}}}


def modern_call(server: Server, conn: Any, name: str, arguments: dict[str, Any]) -> Any:
    meta = {
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": CAPABLE,
    }
    body = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "tools/call",
        "params": {"name": name, "arguments": arguments, "_meta": meta},
    }
    headers = {"MCP-Protocol-Version": "2026-07-28", "Mcp-Method": "tools/call", "Mcp-Name": name}
    return json.loads(send(conn, body, **headers).read())


def assert_switched_off(server: Server, fix: str) -> None:
    seen = len(server.calls())
    for conn in connections_on_two_workers(server):
        refused = modern_call(server, conn, "close_ticket", {"id": "T-1"})["error"]
        assert refused["code"] == ELICITATION_DISABLED
        assert refused["data"]["type"] == "ELICITATION_DISABLED"
        assert refused["message"].startswith("Elicitation is disabled in server configuration.")
        assert fix in refused["message"]
        done = modern_call(server, conn, "assign_ticket", {"id": "T-2", "agent": "Sam"})
        assert done["result"]["structuredContent"]["assigned"] is True
    refused_here = [c for c in server.calls()[seen:] if c["tool"] == "close_ticket"]
    assert {c["code"] for c in refused_here} == {ELICITATION_DISABLED}
    assert len({c["pid"] for c in refused_here}) == 2
    for capabilities in ({}, CAPABLE):
        legacy = LegacyHttp(server, capabilities)
        assert "sendElicitationResult" not in legacy.tools()
        call = {"name": "delete_ticket", "arguments": {"id": "T-3"}}
        refused = legacy.request("tools/call", call)["error"]
        assert refused["data"]["type"] == "ELICITATION_DISABLED"
    outbox = modern_call(server, server.connect(), "list_outbox", {})
    assert outbox["result"]["structuredContent"]["emails"] == []


def switch_spec_off(specs: Path) -> None:
    server = specs / "server.yaml"
    text = server.read_text()
    assert "enabled: true" in text
    server.write_text(text.replace("enabled: true", "enabled: false"))


def test_the_switch_in_the_server_spec(tmp_path: Path) -> None:
    specs = copy_helpdesk(tmp_path)
    switch_spec_off(specs)
    with host_serve(tmp_path, "host", "--workers", "2", specs=specs) as server:
        assert_switched_off(server, "`elicitation: {enabled: false}`")
        # host serve started, and said why tools will not ask.
        assert "elicitation-off" in server.log.read_text()


def test_the_switch_for_the_deployment(tmp_path: Path) -> None:
    with host_serve(tmp_path, "host", "--workers", "2", HOST_ELICITATION="off") as server:
        assert_switched_off(server, "HOST_ELICITATION=off")


def test_the_switch_is_flipped_by_a_reload_without_a_restart(tmp_path: Path) -> None:
    specs = copy_helpdesk(tmp_path)
    with host_serve(tmp_path, "host", "--workers", "2", "--reload", specs=specs) as server:
        asked = modern_call(server, server.connect(), "close_ticket", {"id": "T-1"})
        assert asked["result"]["resultType"] == "input_required"
        switch_spec_off(specs)

        def refused() -> bool:
            answer = modern_call(server, server.connect(), "close_ticket", {"id": "T-1"})
            return "error" in answer

        assert wait_until(refused)
        assert_switched_off(server, "`elicitation: {enabled: false}`")


def test_a_bad_switch_value_is_refused_with_one_clear_line(tmp_path: Path) -> None:
    env = clean_env(HOST_DATA_DIR=str(tmp_path / "data"), HOST_ELICITATION="disabled")
    proc = subprocess.run(
        [sys.executable, "-m", "host", "serve", "--specs", str(ROOT / "specs")],
        capture_output=True, text=True, timeout=60, cwd=tmp_path, env=env,
    )  # fmt: skip
    assert proc.returncode == 1
    assert (
        "host: not serving: HOST_ELICITATION must be on (the specs decide) or off (no tool "
        "asks), got 'disabled'"
    ) in proc.stderr
    assert "Traceback" not in proc.stderr


@pytest.mark.parametrize("written", ["false", "true"])
def test_validate_warns_about_the_switch_and_passes(tmp_path: Path, written: str) -> None:
    specs = copy_helpdesk(tmp_path)
    if written == "false":
        switch_spec_off(specs)
    proc = subprocess.run(
        [sys.executable, "-m", "host", "validate", str(specs)],
        capture_output=True, text=True, timeout=60, cwd=tmp_path,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert ("elicitation-off" in proc.stdout + proc.stderr) is (written == "false")
