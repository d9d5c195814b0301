"""The official MCP Python SDK client's tutorial scenario, in both eras, for any target.

``run_scenario`` connects the SDK's ``Client`` to a URL or a stdio command, offering a given
revision, and runs the seed tutorial's scenario: an elicitation callback that declines, cancels,
leaves the box unticked, sends a mistyped answer, picks an agent and accepts, and every outcome
matches the tutorial. A 2025-03-26 session has no form elicitation: the same outcomes go through
``sendElicitationResult``.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from typing import Any

import anyio
import mcp_types
import pytest
from mcp.client.client import Client
from mcp.client.stdio import StdioServerParameters
from mcp.shared.exceptions import MCPError

__all__ = ["FALLBACK", "LEGACY", "MODERN", "TOOLS", "Answers", "Target", "run_scenario"]

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
