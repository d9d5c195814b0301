"""fastmcp's ``Client`` (4.x), as agent developers use it, on the help-desk example.

Both its connect modes: ``auto`` (the default: it probes ``server/discover`` and speaks 2026-07-28)
and ``legacy`` (the ``initialize`` handshake: 2025-11-25), over HTTP (one ``host serve`` for the
module) and over stdio (``host stdio`` launched by the client, its settings in ``env``). Each lists
the tools (every ``inputSchema`` with ``properties``), closes a ticket through its question with
one email sent, and leaves another open when the user declines. docs/connecting-clients.md's
matrix records what these show. fastmcp is imported where it is used: it takes a second or two
to import, which every pytest worker would otherwise spend collecting this file.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest

from support.paths import ROOT
from support.sdk import FALLBACK, SAID_NO, TOOLS
from support.servers import Server, host_serve

pytestmark = pytest.mark.served

#: The revision each mode negotiates with the host.
MODES = {"auto": "2026-07-28", "legacy": "2025-11-25"}


@pytest.fixture(scope="module")
def http(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    with host_serve(tmp_path_factory.mktemp("fastmcp"), "host") as server:
        yield server


def stdio(tmp_path: Path) -> Any:
    """``host stdio`` as a client's config launches it: its settings in the ``env`` block."""
    from fastmcp.client.transports import StdioTransport

    env = {"HOST_DATA_DIR": str(tmp_path / "data"), "HELPDESK_DB": str(tmp_path / "helpdesk.db")}
    return StdioTransport(
        sys.executable, ["-m", "host", "stdio", "--specs", str(ROOT / "specs")], env=env,
        cwd=str(tmp_path), keep_alive=False,
    )  # fmt: skip


class Answers:
    """fastmcp's elicitation handler: the planned replies, and the messages it was shown."""

    def __init__(self) -> None:
        self.plan: list[tuple[str, Any]] = []
        self.shown: list[str] = []

    async def __call__(self, message: str, response_type: Any, params: Any, context: Any) -> Any:
        from fastmcp.client.elicitation import ElicitResult

        self.shown.append(message)
        action, content = self.plan.pop(0)
        return ElicitResult(action=action, content=content)


def data(result: Any) -> Any:
    if result.structured_content is not None:
        return result.structured_content
    return json.loads(result.content[0].text)


async def emails(client: Any, ticket: str) -> int:
    listed = data(await client.call_tool("list_outbox", {}))["emails"]
    return sum(ticket in email for email in listed)


async def scenario(client: Any, answers: Answers, mode: str) -> None:
    assert client.protocol_version == MODES[mode]
    tools = await client.list_tools()
    assert {t.name for t in tools} == TOOLS
    assert all("properties" in t.input_schema for t in tools)
    before = await emails(client, "T-1")

    answers.plan = [("decline", None)]
    declined = await client.call_tool("close_ticket", {"id": "T-2"})
    assert data(declined) == {"id": "T-2", "closed": False, "reason": SAID_NO}

    answers.plan = [("accept", {"confirm": True})]
    closed = await client.call_tool("close_ticket", {"id": "T-1"})
    assert data(closed) == {"id": "T-1", "closed": True}
    assert answers.shown[-1].startswith('Close T-1 ("Cannot log in")')
    assert await emails(client, "T-1") == before + 1
    assert await emails(client, "T-2") == 0
    assert not answers.plan


def run(target: Any, mode: str) -> None:
    from fastmcp import Client

    answers = Answers()

    async def main() -> None:
        with anyio.fail_after(60):
            async with Client(target, mode=mode, elicitation_handler=answers) as client:
                await scenario(client, answers, mode)

    anyio.run(main)


@pytest.mark.parametrize("mode", list(MODES))
def test_over_http(http: Server, mode: str) -> None:
    run(f"{http.url}/mcp", mode)


@pytest.mark.parametrize("mode", list(MODES))
def test_over_stdio(tmp_path: Path, mode: str) -> None:
    run(stdio(tmp_path), mode)


def per_call(target: Any, name: str, arguments: dict[str, Any]) -> Any:
    """One call in a session of its own, as langchain-mcp-adapters' default tools make them.

    Over stdio that is a new ``host stdio`` process per call, as llama-index's client does.
    """

    from fastmcp import Client

    async def main() -> Any:
        with anyio.fail_after(30):
            async with Client(target, mode="legacy") as client:
                assert client.protocol_version == MODES["legacy"]
                if name == "":
                    return await client.list_tools()
                return await client.call_tool(name, arguments, raise_on_error=False)

    return anyio.run(main)


def session_per_call(target: Any, reuse: bool = True) -> None:
    """A client without forms finishes a question through the fallback tool, a session a call."""
    listed = per_call(target, "", {})
    assert {t.name for t in listed} == TOOLS | {FALLBACK}
    asked = per_call(target, "delete_ticket", {"id": "T-4"})
    eid = json.loads(asked.content[1].text)["elicitationId"]
    answer = {"elicitationId": eid, "action": "accept", "content": {"confirm": True}}
    done = per_call(target, FALLBACK, answer)
    assert data(done) == {"id": "T-4", "deleted": True}
    if reuse:
        again = per_call(target, FALLBACK, answer)
        assert again.is_error and "already used" in again.content[0].text


def test_a_session_per_call_finishes_the_fallback_over_http(http: Server) -> None:
    session_per_call(f"{http.url}/mcp")


def test_a_process_per_call_finishes_the_fallback_over_stdio(tmp_path: Path) -> None:
    session_per_call(stdio(tmp_path), reuse=False)
