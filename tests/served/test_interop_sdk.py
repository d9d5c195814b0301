"""The official MCP Python SDK client (2.3.0) on the help-desk example: both eras and transports.

Over HTTP the server is the real ``host serve`` (gunicorn, two gthread workers), one per module;
over stdio each test launches ``host stdio`` as the SDK launches servers. Each revision runs the
seed tutorial's scenario: an elicitation callback that declines, cancels, leaves the box unticked,
sends a mistyped answer, picks an agent and accepts, and every outcome matches the tutorial. A
2025-03-26 session has no form elicitation: the same outcomes go through ``sendElicitationResult``.

The scenario is ``support/sdk.py``'s. The SDK offers its newest handshake revision in ``initialize``
(``mcp.client.session.LATEST_HANDSHAKE_VERSION``, read when it sends the request); patching that
name is how a test makes it offer an older one, which the host then accepts.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from pathlib import Path

import anyio
import pytest
from mcp.client.client import Client
from mcp.client.stdio import StdioServerParameters

from support.paths import ROOT
from support.sdk import FALLBACK, LEGACY, MODERN, TOOLS, run_scenario
from support.servers import Server, host_serve

pytestmark = pytest.mark.served


@pytest.fixture(scope="module")
def http(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    tmp_path = tmp_path_factory.mktemp("interop")
    with host_serve(tmp_path, "host", "--workers", "2", "--threads", "8") as server:
        yield server


def events(server: Server) -> list[str]:
    lines = [json.loads(raw) for raw in server.log.read_text().splitlines() if raw.startswith("{")]
    return [line.get("event", "") for line in lines]


@pytest.mark.parametrize("revision", [MODERN, *LEGACY])
def test_over_http(http: Server, revision: str, monkeypatch: pytest.MonkeyPatch) -> None:
    before = len(events(http))
    run_scenario(f"http://127.0.0.1:{http.port}/mcp", revision, monkeypatch)
    seen = events(http)[before:]
    # How the questions travelled: MRTR rounds, the call's SSE stream, or the fallback tool.
    streamed, relayed = seen.count("question_sent"), seen.count("answer_relayed")
    in_results = seen.count("fallback_question")
    expected = {MODERN: (0, 0), "2025-03-26": (0, 6)}.get(revision, (6, 0))
    assert (streamed, in_results) == expected
    assert relayed == streamed
    # The SDK ends a legacy session with DELETE when it closes.
    assert seen.count("session_ended") == (revision != MODERN)


@pytest.mark.filterwarnings("ignore:ping is removed:mcp.shared.exceptions.MCPDeprecationWarning")
def test_an_sdk_offering_2024_11_05_gets_the_newest_legacy_revision(
    http: Server, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("mcp.client.session.LATEST_HANDSHAKE_VERSION", "2024-11-05")

    async def main() -> None:
        with anyio.fail_after(30):
            async with Client(f"http://127.0.0.1:{http.port}/mcp", mode="legacy") as client:
                assert client.protocol_version == "2025-11-25"
                assert {t.name for t in (await client.list_tools()).tools} == TOOLS | {FALLBACK}
                await client.send_ping()

    anyio.run(main)


def stdio_target(tmp_path: Path) -> StdioServerParameters:
    return StdioServerParameters(
        command=sys.executable,
        args=["-m", "host", "stdio", "--specs", str(ROOT / "specs")],
        env={
            "HOST_DATA_DIR": str(tmp_path / "data"),
            "HELPDESK_DB": str(tmp_path / "helpdesk.db"),
        },
        cwd=tmp_path,
    )


@pytest.mark.parametrize("revision", [MODERN, *LEGACY])
def test_over_stdio(tmp_path: Path, revision: str, monkeypatch: pytest.MonkeyPatch) -> None:
    run_scenario(stdio_target(tmp_path), revision, monkeypatch)
