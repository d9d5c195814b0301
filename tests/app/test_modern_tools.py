"""server/discover, tools/list and the plain tools/call results of 2026-07-28."""

from __future__ import annotations

from pathlib import Path

import pytest
from mcp_types._v2026_07_28 import CallToolResult, DiscoverResult, ListToolsResult

from support.helpdesk import use_tmp_data
from support.modern import VERSION, Mcp, make_client

SERVER_INFO = {"name": "help-desk", "version": "1.0.0"}


@pytest.fixture
def mcp(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Mcp:
    use_tmp_data(tmp_path, monkeypatch)
    return make_client(tmp_path)


def test_discover(mcp: Mcp) -> None:
    result = mcp.result(mcp.request("server/discover"))
    DiscoverResult.model_validate(result)
    assert result["resultType"] == "complete"
    assert result["supportedVersions"] == [VERSION]
    assert result["capabilities"] == {"tools": {}, "logging": {}}
    assert result["instructions"].startswith("Tools for the support desk")
    assert result["ttlMs"] > 0
    assert result["cacheScope"] == "public"
    assert result["_meta"]["io.modelcontextprotocol/serverInfo"] == SERVER_INFO


def test_tools_list(mcp: Mcp) -> None:
    result = mcp.result(mcp.request("tools/list"))
    ListToolsResult.model_validate(result)
    assert result["resultType"] == "complete"
    assert result["ttlMs"] > 0 and result["cacheScope"] == "public"
    assert "nextCursor" not in result
    assert result["_meta"]["io.modelcontextprotocol/serverInfo"] == SERVER_INFO
    tools = {t["name"]: t for t in result["tools"]}
    assert [t["name"] for t in result["tools"]] == sorted(tools)
    assert "sendElicitationResult" not in tools

    close = tools["close_ticket"]
    assert close["title"] == "Close ticket"
    assert close["description"].startswith("Close a support ticket")
    assert close["annotations"] == {"destructiveHint": True}
    assert close["inputSchema"]["type"] == "object"
    assert close["inputSchema"]["required"] == ["id"]
    assert tools["assign_ticket"]["inputSchema"]["properties"]["agent"]["enum"] == [
        "Nour",
        "Sam",
        "Priya",
    ]
    outbox = tools["list_outbox"]
    assert outbox["annotations"] == {"readOnlyHint": True}
    assert outbox["inputSchema"] == {"type": "object", "properties": {}}
    assert all("properties" in t["inputSchema"] for t in tools.values())
    assert outbox["outputSchema"]["required"] == ["emails"]


def test_tools_list_is_the_same_every_time(mcp: Mcp, tmp_path: Path) -> None:
    first = mcp.result(mcp.request("tools/list"))
    other = make_client(tmp_path)
    assert other.result(other.request("tools/list", capabilities={})) == first


def test_tools_list_refuses_a_cursor_it_never_issued(mcp: Mcp) -> None:
    response = mcp.request("tools/list", {"cursor": "abc"})
    assert response.status_code == 400
    assert response.json["error"]["code"] == -32602


def test_a_tool_that_needs_no_question_completes_at_once(mcp: Mcp) -> None:
    result = mcp.result(mcp.call("list_outbox"))
    CallToolResult.model_validate(result)
    assert result["resultType"] == "complete"
    assert result["structuredContent"] == {"emails": []}
    assert result["content"] == [{"type": "text", "text": '{"emails": []}'}]
    assert result["_meta"]["io.modelcontextprotocol/serverInfo"] == SERVER_INFO


def test_unknown_tool(mcp: Mcp) -> None:
    response = mcp.call("reopen_ticket", {"id": "T-1"})
    assert response.status_code == 400
    error = response.json["error"]
    assert error["code"] == -32602
    assert "reopen_ticket" in error["message"]


def test_bad_arguments_are_a_tool_error_the_model_can_fix(mcp: Mcp) -> None:
    result = mcp.result(mcp.call("assign_ticket", {"id": "T-2", "agent": "Bob"}))
    assert result["resultType"] == "complete"
    assert result["isError"] is True
    text = result["content"][0]["text"]
    assert "agent" in text and "Bob" in text
    missing = mcp.result(mcp.call("close_ticket", {}))
    assert missing["isError"] is True and "id" in missing["content"][0]["text"]


@pytest.mark.parametrize(
    ("params", "needle"),
    [
        ({"arguments": {}}, "params.name"),
        ({"name": 5}, "params.name"),
        ({"name": "close_ticket", "arguments": [1]}, "params.arguments"),
        (
            {"name": "close_ticket", "arguments": {"id": "T-1"}, "inputResponses": []},
            "inputResponses",
        ),
    ],
)
def test_malformed_call_params(mcp: Mcp, params: dict[str, object], needle: str) -> None:
    headers = mcp.headers("tools/call")
    if isinstance(params.get("name"), str):
        headers["Mcp-Name"] = str(params["name"])
    response = mcp.request("tools/call", params, headers=headers)
    assert response.status_code == 400
    assert response.json["error"]["code"] == -32602
    assert needle in response.json["error"]["message"]
