"""``host stdio`` byte by byte: newline-delimited JSON-RPC on stdout, and nothing else there.

The SDK interop tests (``test_interop_sdk.py``) drive whole scenarios; these check the wire: what
goes to stdout and to stderr, a legacy question as a server-to-client request, both eras on one
connection, and specs that cannot be served.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from support.helpdesk import survey_project
from support.paths import ROOT
from support.stdio import Stdio

pytestmark = pytest.mark.served

MODERN_META = {
    "io.modelcontextprotocol/protocolVersion": "2026-07-28",
    "io.modelcontextprotocol/clientCapabilities": {},
}


def request(id_: int, method: str, params: dict[str, Any]) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": id_, "method": method, "params": params}


def test_a_legacy_session_with_a_question_over_stdio(tmp_path: Path) -> None:
    stdio = Stdio(tmp_path, "--specs", str(ROOT / "specs"))
    stdio.send(request(1, "initialize", {"protocolVersion": "2025-06-18",
                                          "capabilities": {"elicitation": {}}}))  # fmt: skip
    init = stdio.receive()
    assert init["result"]["protocolVersion"] == "2025-06-18"
    stdio.send({"jsonrpc": "2.0", "method": "notifications/initialized"})
    stdio.send(request(2, "tools/call", {"name": "close_ticket", "arguments": {"id": "T-1"}}))
    question = stdio.receive()
    assert question["method"] == "elicitation/create" and "mode" not in question["params"]
    # Other messages keep flowing while the call waits for its answer.
    stdio.send(request(3, "ping", {}))
    assert stdio.receive() == {"jsonrpc": "2.0", "id": 3, "result": {}}
    stdio.send({"jsonrpc": "2.0", "id": question["id"],
                "result": {"action": "accept", "content": {"confirm": True}}})  # fmt: skip
    assert stdio.receive()["result"]["structuredContent"] == {"id": "T-1", "closed": True}
    # A modern request on the same connection is served statelessly.
    stdio.send(request(4, "tools/call", {"name": "close_ticket", "arguments": {"id": "T-2"},
                                         "_meta": MODERN_META}))  # fmt: skip
    modern = stdio.receive()
    assert modern["error"]["code"] == -32021
    rest, status = stdio.close()
    assert rest == b"" and status == 0
    events = [line.get("event") for line in stdio.logs()]
    assert "stdio_started" in events and "session_started" in events
    assert "session_ended" in events


def test_stdout_carries_protocol_messages_only(tmp_path: Path) -> None:
    survey_project(tmp_path)
    handler = tmp_path / "survey-handlers" / "survey.py"
    handler.write_text('print("a handler that prints")\n' + handler.read_text())
    stdio = Stdio(
        tmp_path,
        "--specs",
        str(tmp_path / "survey-specs"),
        "--handlers",
        str(tmp_path / "survey-handlers"),
    )
    stdio.send(b"this is not json")
    stdio.send(request(1, "tools/list", {"_meta": MODERN_META}))
    listed = stdio.receive()
    assert [t["name"] for t in listed["result"]["tools"]] == ["survey"]
    rest, status = stdio.close()
    assert rest == b"" and status == 0
    stdio.stderr.seek(0)
    stderr = stdio.stderr.read().decode()
    assert "a handler that prints" in stderr
    assert any(line.get("event") == "stdio_refused" for line in stdio.logs())


def test_specs_that_cannot_be_served(tmp_path: Path) -> None:
    specs = tmp_path / "specs"
    specs.mkdir()
    (specs / "bad.yaml").write_text("kind: tool\nname: broken\n")
    done = subprocess.run(
        [sys.executable, "-m", "host", "stdio", "--specs", str(specs)],
        capture_output=True,
        timeout=60,
        cwd=tmp_path,
        stdin=subprocess.DEVNULL,
    )
    assert done.returncode == 1
    assert done.stdout == b""
    assert b"bad.yaml:" in done.stderr and b"host stdio: not serving" in done.stderr
    assert b"Traceback" not in done.stderr
