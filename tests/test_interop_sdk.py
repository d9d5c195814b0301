"""The official MCP Python SDK client (2.3.0) on the help-desk example: both eras and transports.

Over HTTP the server is the real ``host serve`` (gunicorn, two gthread workers), one per module;
over stdio each test launches ``host stdio`` as the SDK launches servers. Each revision runs the
seed tutorial's scenario: an elicitation callback that declines, cancels, leaves the box unticked,
sends a mistyped answer, picks an agent and accepts, and every outcome matches the tutorial. A
2025-03-26 session has no form elicitation: the same outcomes go through ``sendElicitationResult``.

The SDK offers its newest handshake revision in ``initialize``
(``mcp.client.session.LATEST_HANDSHAKE_VERSION``, read when it sends the request); patching that
name is how a test makes it offer an older one, which the host then accepts.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Awaitable, Callable, Iterator
from pathlib import Path
from typing import Any

import anyio
import mcp_types
import pytest
from mcp.client.client import Client
from mcp.client.stdio import StdioServerParameters
from mcp.shared.exceptions import MCPError
from servers import Server, host_serve

ROOT = Path(__file__).resolve().parent.parent
MODERN = "2026-07-28"
LEGACY = ["2025-11-25", "2025-06-18", "2025-03-26"]
FALLBACK = "sendElicitationResult"
TOOLS = {
    "assign_ticket",
    "close_ticket",
    "delete_ticket",
    "list_outbox",
    "rollback_deploy",
    "service_status",
}

Target = str | StdioServerParameters


class Answers:
    """The elicitation callback: answers from a plan, and a record of what was asked."""

    def __init__(self) -> None:
        self.plan: list[mcp_types.ElicitResult] = []
        self.asked: list[Any] = []

    async def __call__(self, context: Any, params: Any) -> mcp_types.ElicitResult:
        self.asked.append(params)
        return self.plan.pop(0)


def data(result: mcp_types.CallToolResult) -> Any:
    """A result's structured content, or its JSON text for 2025-03-26."""
    if result.structured_content is not None:
        return result.structured_content
    block = result.content[0]
    assert isinstance(block, mcp_types.TextContent)
    return json.loads(block.text)


def text(result: mcp_types.CallToolResult, index: int = 0) -> str:
    block = result.content[index]
    assert isinstance(block, mcp_types.TextContent)
    return block.text


async def emails(client: Client, ticket: str) -> int:
    listed = data(await client.call_tool("list_outbox", {}))
    return sum(ticket in email for email in listed["emails"])


def accept(content: dict[str, Any]) -> mcp_types.ElicitResult:
    return mcp_types.ElicitResult(action="accept", content=content)


SAID_NO = "The user said no. Leave the ticket open."
DISMISSED = "The user dismissed the question without answering."
UNTICKED = "The user didn't tick the box."
#: (what the callback answers, the same as sendElicitationResult's action and content, reason).
NOT_CONFIRMED = [
    (mcp_types.ElicitResult(action="decline"), "decline", None, SAID_NO),
    (mcp_types.ElicitResult(action="cancel"), "cancel", None, DISMISSED),
    (accept({"confirm": False}), "accept", {"confirm": False}, UNTICKED),
]


async def with_forms(client: Client, answers: Answers) -> None:
    """The tutorial's outcomes for a client whose callback shows the forms."""
    names = {tool.name for tool in (await client.list_tools()).tools}
    assert names == TOOLS
    before = await emails(client, "T-1")
    for reply, _, _, reason in NOT_CONFIRMED:
        answers.plan = [reply]
        result = await client.call_tool("close_ticket", {"id": "T-2"})
        assert data(result) == {"id": "T-2", "closed": False, "reason": reason}
    answers.plan = [accept({"confirm": "yes"})]
    with pytest.raises(MCPError) as info:
        await client.call_tool("close_ticket", {"id": "T-2"})
    assert info.value.error.code == -32602
    assert "does not match the requested schema" in info.value.error.message
    answers.plan = [accept({"agent": "Priya"})]
    assigned = await client.call_tool("assign_ticket", {"id": "T-3"})
    assert data(assigned) == {"id": "T-3", "assigned": True, "agent": "Priya"}
    assert answers.asked[-1].requested_schema["properties"]["agent"]["enum"] == [
        "Nour",
        "Sam",
        "Priya",
    ]
    answers.plan = [accept({"confirm": True})]
    closed = await client.call_tool("close_ticket", {"id": "T-1"})
    assert data(closed) == {"id": "T-1", "closed": True}
    assert 'Close T-1 ("Cannot log in")' in answers.asked[-1].message
    assert answers.asked[-1].requested_schema["properties"]["confirm"]["type"] == "boolean"
    assert await emails(client, "T-1") == before + 1
    assert await emails(client, "T-2") == 0
    assert not answers.plan


async def through_fallback(client: Client, answers: Answers) -> None:
    """The same outcomes for a session that cannot show forms: through the fallback tool."""
    names = {tool.name for tool in (await client.list_tools()).tools}
    assert names == TOOLS | {FALLBACK}

    async def ask(name: str, arguments: dict[str, Any]) -> str:
        result = await client.call_tool(name, arguments)
        assert not result.is_error
        assert FALLBACK in text(result)
        eid: str = json.loads(text(result, 1))["elicitationId"]
        return eid

    async def send(eid: str, action: str, content: Any = None) -> mcp_types.CallToolResult:
        arguments: dict[str, Any] = {"elicitationId": eid, "action": action}
        if content is not None:
            arguments["content"] = content
        return await client.call_tool(FALLBACK, arguments)

    before = await emails(client, "T-1")
    for _, action, content, reason in NOT_CONFIRMED:
        eid = await ask("close_ticket", {"id": "T-2"})
        result = await send(eid, action, content)
        assert data(result) == {"id": "T-2", "closed": False, "reason": reason}
    eid = await ask("close_ticket", {"id": "T-2"})
    wrong = await send(eid, "accept", {"confirm": "yes"})
    assert wrong.is_error and "does not match the requested schema" in text(wrong)
    assert data(await send(eid, "decline")) == {
        "id": "T-2",
        "closed": False,
        "reason": SAID_NO,
    }
    eid = await ask("assign_ticket", {"id": "T-3"})
    assigned = await send(eid, "accept", {"agent": "Priya"})
    assert data(assigned) == {"id": "T-3", "assigned": True, "agent": "Priya"}
    eid = await ask("close_ticket", {"id": "T-1"})
    closed = await send(eid, "accept", {"confirm": True})
    assert data(closed) == {"id": "T-1", "closed": True}
    reused = await send(eid, "accept", {"confirm": True})
    assert reused.is_error and "already used" in text(reused)
    assert await emails(client, "T-1") == before + 1
    assert await emails(client, "T-2") == 0
    assert not answers.asked


def run_scenario(
    target: Target,
    revision: str,
    monkeypatch: pytest.MonkeyPatch,
    scenario: Callable[[Client, Answers], Awaitable[None]] | None = None,
) -> None:
    answers = Answers()
    if revision == MODERN:
        mode = MODERN
    else:
        mode = "legacy"
        monkeypatch.setattr("mcp.client.session.LATEST_HANDSHAKE_VERSION", revision)
    if scenario is None:
        scenario = through_fallback if revision == "2025-03-26" else with_forms

    async def main() -> None:
        with anyio.fail_after(60):
            async with Client(target, mode=mode, elicitation_callback=answers) as client:
                assert client.protocol_version == revision
                await scenario(client, answers)

    anyio.run(main)


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
