"""Legacy sessions over HTTP: initialize, session ids, headers, DELETE, tools and results per era.

Every test drives the real Falcon app in-process with the help-desk example, a real SQLite store and
help-desk database in ``tmp_path``.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

from host.limits import LimitSettings
from host.protocol import REVISIONS
from host.protocol.legacy.sessions import SessionSealer
from support.helpdesk import use_tmp_data
from support.legacy import FORM, NEWEST, Legacy, legacy_client, structured
from support.modern import Mcp, make_client

VERSIONS = ["2025-11-25", "2025-06-18", "2025-03-26"]


def error_of(response: Any, status: int, code: int) -> dict[str, Any]:
    assert response.status_code == status, response.text
    error: dict[str, Any] = response.json["error"]
    assert error["code"] == code, error
    return error


@pytest.mark.parametrize("version", VERSIONS)
def test_initialize_answers_with_the_clients_version(legacy: Legacy, version: str) -> None:
    result = legacy.initialize(version)
    assert result["protocolVersion"] == version
    assert result["capabilities"] == {"tools": {"listChanged": True}, "logging": {}}
    assert result["serverInfo"] == {"name": "help-desk", "version": "1.0.0"}
    assert "support desk" in result["instructions"]
    assert "resultType" not in result
    assert legacy.session is not None
    assert re.fullmatch(r"[\x21-\x7e]{16,512}", legacy.session)


@pytest.mark.parametrize("requested", ["2024-11-05", "2099-01-01", "2026-07-28", "draft"])
def test_initialize_offers_the_newest_legacy_version_otherwise(
    legacy: Legacy, requested: str
) -> None:
    assert legacy.initialize(requested)["protocolVersion"] == NEWEST


def test_initialize_needs_a_protocol_version(legacy: Legacy) -> None:
    body = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"capabilities": {}}}
    error = error_of(legacy.post(body), 400, -32602)
    assert "protocolVersion" in error["message"]


def test_initialize_with_modern_meta_is_not_a_handshake(legacy: Legacy) -> None:
    mcp = Mcp(legacy.http)
    error_of(mcp.request("initialize", {"protocolVersion": NEWEST}), 404, -32601)


def test_ping_initialized_and_set_level(legacy: Legacy) -> None:
    legacy.initialize()
    assert legacy.result(legacy.request("ping")) == {}
    assert legacy.result(legacy.request("logging/setLevel", {"level": "info"})) == {}
    cancelled = {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 1}}
    assert legacy.post(cancelled).status_code == 202


def test_requests_need_a_session(legacy: Legacy) -> None:
    legacy.initialize()
    legacy.session = None
    error = error_of(legacy.request("tools/list"), 400, -32600)
    assert "Mcp-Session-Id" in error["message"] and "initialize" in error["message"]


@pytest.mark.parametrize(
    "forge",
    [
        lambda sid: sid + "x",
        lambda sid: sid[:-3] + ("AAA" if not sid.endswith("AAA") else "BBB"),
        lambda sid: "not-a-session",
        lambda sid: sid.split(".")[0] if not sid.startswith(".") else "." + sid.split(".")[1],
    ],
    ids=["appended", "tampered-signature", "made-up", "no-signature"],
)
def test_unknown_or_forged_sessions_get_404(legacy: Legacy, forge: Any) -> None:
    legacy.initialize()
    assert legacy.session is not None
    legacy.session = forge(legacy.session)
    error = error_of(legacy.request("tools/list"), 404, -32600)
    assert "Session not found" in error["message"]


def test_a_session_signed_with_another_key_is_refused(tmp_path: Path, legacy: Legacy) -> None:
    other = legacy_client(tmp_path / "other", secrets=("another-key-0123456789abcdef0123456789",))
    other.initialize()
    legacy.session, legacy.version = other.session, other.version
    error_of(legacy.request("tools/list"), 404, -32600)


def test_session_ids_are_bound_to_the_caller_and_expire() -> None:
    now = [1000.0]
    sealer = SessionSealer(["k"], 60, clock=lambda: now[0])
    session, token = sealer.start(
        REVISIONS["2025-06-18"], {"elicitation": {}}, {"name": "c"}, "alice"
    )
    assert session.forms and session.revision.structured
    opened = sealer.open(token, "alice")
    assert opened == session
    assert sealer.open(token, "bob") is None
    now[0] += 61
    assert sealer.open(token, "alice") is None


def test_forms_need_a_revision_that_has_them() -> None:
    sealer = SessionSealer(["k"], 60)

    def forms(version: str, capabilities: dict[str, Any] | None) -> bool:
        return sealer.start(REVISIONS[version], capabilities or {}, None, "a")[0].forms

    assert not forms("2025-03-26", FORM)
    assert not forms("2025-06-18", {"elicitation": {"url": {}}})
    assert not forms("2025-11-25", {})
    assert forms("2025-06-18", {"elicitation": {}})


def test_version_header_rules(legacy: Legacy) -> None:
    legacy.initialize("2025-06-18")
    # Absent: the session's own revision applies.
    assert legacy.result(legacy.request("ping", **{"MCP-Protocol-Version": ""})) == {}
    legacy.version = None
    assert legacy.result(legacy.request("ping")) == {}
    # Another legacy revision: tolerated, the session's revision still governs.
    legacy.version = "2025-03-26"
    assert "structuredContent" in legacy.call("list_outbox")
    # One the host does not serve: 400.
    for bad in ("1999-01-01", "2024-11-05"):
        legacy.version = bad
        error = error_of(legacy.request("tools/list"), 400, -32600)
        assert bad in error["message"] and "2025-06-18" in error["message"]


def test_delete_ends_the_session_everywhere(tmp_path: Path, legacy: Legacy) -> None:
    legacy.initialize()
    # A second app with the same secret and store: another worker, or another instance.
    twin = legacy_client(tmp_path)
    twin.session, twin.version = legacy.session, legacy.version
    assert twin.result(twin.request("ping")) == {}
    deleted = legacy.http.simulate_delete("/mcp", headers=legacy.headers())
    assert deleted.status_code == 204
    error_of(twin.request("ping"), 404, -32600)
    error_of(legacy.request("tools/list"), 404, -32600)
    again = legacy.http.simulate_delete("/mcp", headers=legacy.headers())
    error_of(again, 404, -32600)


def test_delete_of_a_forged_session_is_404_and_without_one_405(legacy: Legacy) -> None:
    legacy.initialize()
    forged = legacy.http.simulate_delete("/mcp", headers=legacy.headers(**{"Mcp-Session-Id": "x"}))
    error_of(forged, 404, -32600)
    legacy.session = None
    assert legacy.http.simulate_delete("/mcp", headers=legacy.headers()).status_code == 405


def test_delete_checks_the_origin(legacy: Legacy) -> None:
    legacy.initialize()
    refused = legacy.http.simulate_delete(
        "/mcp", headers=legacy.headers(Origin="http://evil.example")
    )
    assert refused.status_code == 403


def test_tools_follow_the_revision(legacy: Legacy) -> None:
    legacy.initialize("2025-11-25")
    newest = {t["name"]: t for t in legacy.tools()}
    assert list(newest) == [
        "assign_ticket",
        "close_ticket",
        "delete_ticket",
        "list_outbox",
        "rollback_deploy",
        "service_status",
    ]
    assert newest["list_outbox"]["title"] == "List outbox"
    assert "outputSchema" in newest["list_outbox"]
    legacy.initialize("2025-06-18", {"elicitation": {}})
    assert {t["name"]: t for t in legacy.tools()} == newest
    legacy.initialize("2025-03-26", {})
    oldest = {t["name"]: t for t in legacy.tools()}
    assert "sendElicitationResult" in oldest
    assert all("title" not in t and "outputSchema" not in t for t in oldest.values())
    assert oldest["close_ticket"]["inputSchema"] == newest["close_ticket"]["inputSchema"]
    assert oldest["close_ticket"]["annotations"] == {"destructiveHint": True}
    # A tool without inputs still lists `properties` (mcpadapt's smolagents tools index it).
    for tools in (newest, oldest):
        assert tools["service_status"]["inputSchema"] == {"type": "object", "properties": {}}
        assert all("properties" in t["inputSchema"] for t in tools.values())


@pytest.mark.parametrize(
    ("version", "capabilities", "listed"),
    [
        ("2025-11-25", FORM, False),
        ("2025-11-25", {"elicitation": {}}, False),
        ("2025-11-25", {}, True),
        ("2025-11-25", {"elicitation": {"url": {}}}, True),
        ("2025-06-18", {"elicitation": {}}, False),
        ("2025-06-18", {"sampling": {}}, True),
        ("2025-03-26", FORM, True),
    ],
)
def test_the_fallback_tool_is_listed_only_for_sessions_without_forms(
    legacy: Legacy, version: str, capabilities: dict[str, Any], listed: bool
) -> None:
    legacy.initialize(version, capabilities)
    names = [t["name"] for t in legacy.tools()]
    assert ("sendElicitationResult" in names) is listed


def test_modern_requests_never_see_the_fallback_tool(tmp_path: Path, legacy: Legacy) -> None:
    mcp = Mcp(legacy.http, capabilities={})
    tools = mcp.result(mcp.request("tools/list"))["tools"]
    assert "sendElicitationResult" not in [t["name"] for t in tools]


@pytest.mark.parametrize("version", VERSIONS)
def test_results_follow_the_revision(legacy: Legacy, version: str) -> None:
    legacy.initialize(version)
    result = legacy.call("assign_ticket", {"id": "T-2", "agent": "Sam"})
    assert "resultType" not in result and "_meta" not in result
    assert structured(result) == {"id": "T-2", "assigned": True, "agent": "Sam"}
    assert ("structuredContent" in result) is (version != "2025-03-26")
    bad = legacy.call("assign_ticket", {"id": "T-2", "agent": "Bob"})
    assert bad["isError"] is True and "agent" in bad["content"][0]["text"]
    missing = legacy.call("close_ticket", {"id": "T-99"})
    assert missing == {
        "content": [{"type": "text", "text": "There's no ticket T-99."}],
        "isError": True,
    }


def test_method_errors_in_a_session_are_http_200(legacy: Legacy) -> None:
    legacy.initialize()
    error = error_of(legacy.request("resources/list"), 200, -32601)
    assert "resources/list" in error["message"]
    error = error_of(legacy.request("tools/call", {"name": "nope", "arguments": {}}), 200, -32602)
    assert "nope" in error["message"]
    error_of(legacy.request("tools/call", {"name": "list_outbox", "arguments": []}), 200, -32602)
    error_of(legacy.request("tools/list", {"cursor": "abc"}), 200, -32602)


def test_responses_without_a_session_or_with_bad_ids_are_refused(legacy: Legacy) -> None:
    response = {"jsonrpc": "2.0", "id": "q", "result": {"action": "accept"}}
    error_of(legacy.post(response), 400, -32600)
    legacy.initialize()
    error = error_of(legacy.post(response), 400, -32600)
    assert error["message"].startswith("Unknown response")
    assert legacy.post({"jsonrpc": "2.0", "id": 1}).status_code == 400


def test_modern_clients_are_unaffected(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    use_tmp_data(tmp_path, monkeypatch)
    mcp = make_client(tmp_path)
    result = mcp.result(mcp.call("assign_ticket", {"id": "T-2", "agent": "Sam"}))
    assert result["resultType"] == "complete"
    response = {"jsonrpc": "2.0", "id": "q", "result": {}}
    assert mcp.post(response, mcp.headers("tools/call")).status_code == 400


def test_anonymous_sessions_are_not_limited_as_one_principal(tmp_path: Path) -> None:
    # NOTE: without auth settings everyone is `anonymous`: a sessions limit of 2 would let two
    # people in; it counts authenticated principals only (tests/served/test_tenants.py).
    http = legacy_client(tmp_path, limits=LimitSettings(sessions=2)).http
    sessions = []
    for _ in range(5):
        legacy = Legacy(http)
        legacy.initialize(NEWEST, {})
        sessions.append(legacy)
    assert all(s.result(s.request("ping")) == {} for s in sessions)
