"""Streamable HTTP rules for 2026-07-28: methods, headers, versions, Origin, sizes, framing."""

from __future__ import annotations

import base64
import json
from pathlib import Path
from typing import Any

import pytest

from support.helpdesk import use_tmp_data
from support.modern import VERSION, Mcp, make_client


@pytest.fixture
def mcp(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Mcp:
    use_tmp_data(tmp_path, monkeypatch)
    return make_client(tmp_path)


def error_of(response: Any, status: int, code: int) -> dict[str, Any]:
    assert response.status_code == status, response.text
    assert response.headers["content-type"].startswith("application/json")
    body = response.json
    assert body["jsonrpc"] == "2.0"
    assert body["error"]["code"] == code, body
    error: dict[str, Any] = body["error"]
    return error


def request_body(method: str = "tools/list", **params: Any) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": 7, "method": method, "params": params}


@pytest.mark.parametrize("verb", ["GET", "DELETE"])
def test_get_and_delete_are_not_allowed(mcp: Mcp, verb: str) -> None:
    response = mcp.http.simulate_request(verb, "/mcp")
    assert response.status_code == 405
    assert response.headers["allow"] == "POST"


def test_health_and_readiness(mcp: Mcp) -> None:
    assert mcp.http.simulate_get("/healthz").json == {"status": "ok"}
    ready = mcp.http.simulate_get("/readyz")
    assert ready.status_code == 200
    assert ready.json == {"status": "ready", "tools": 6}


def test_results_are_not_cached(mcp: Mcp) -> None:
    response = mcp.request("tools/list")
    assert response.status_code == 200
    assert response.headers["cache-control"] == "no-store"


def test_missing_meta_is_invalid_params(mcp: Mcp) -> None:
    body = request_body()
    error = error_of(mcp.post(body, mcp.headers("tools/list")), 400, -32602)
    assert "io.modelcontextprotocol/protocolVersion" in error["message"]
    assert body["id"] == 7


@pytest.mark.parametrize(
    "missing",
    ["io.modelcontextprotocol/protocolVersion", "io.modelcontextprotocol/clientCapabilities"],
)
def test_each_required_meta_field_is_checked(mcp: Mcp, missing: str) -> None:
    meta = mcp.meta()
    del meta[missing]
    body = request_body(_meta=meta)
    error = error_of(mcp.post(body, mcp.headers("tools/list")), 400, -32602)
    assert missing in error["message"]


def test_client_capabilities_must_be_an_object(mcp: Mcp) -> None:
    meta = {**mcp.meta(), "io.modelcontextprotocol/clientCapabilities": "all"}
    error_of(mcp.post(request_body(_meta=meta), mcp.headers("tools/list")), 400, -32602)


def test_unsupported_version(mcp: Mcp) -> None:
    meta = {**mcp.meta(), "io.modelcontextprotocol/protocolVersion": "2099-01-01"}
    headers = {**mcp.headers("tools/list"), "MCP-Protocol-Version": "2099-01-01"}
    error = error_of(mcp.post(request_body(_meta=meta), headers), 400, -32022)
    assert error["data"] == {"supported": [VERSION], "requested": "2099-01-01"}


@pytest.mark.parametrize(
    ("header", "value"),
    [
        ("MCP-Protocol-Version", None),
        ("MCP-Protocol-Version", "2025-06-18"),
        ("Mcp-Method", None),
        ("Mcp-Method", "tools/list"),
        ("Mcp-Name", None),
        ("Mcp-Name", "delete_ticket"),
    ],
)
def test_routing_headers_must_match_the_body(mcp: Mcp, header: str, value: str | None) -> None:
    headers = mcp.headers("tools/call", "close_ticket")
    if value is None:
        del headers[header]
    else:
        headers[header] = value
    body = request_body(
        "tools/call", name="close_ticket", arguments={"id": "T-1"}, _meta=mcp.meta()
    )
    error = error_of(mcp.post(body, headers), 400, -32020)
    assert header in error["message"]
    assert mcp.outbox() == []


def test_header_names_are_case_insensitive(mcp: Mcp) -> None:
    headers = {k.lower(): v for k, v in mcp.headers("tools/call", "list_outbox").items()}
    headers["mcp-protocol-VERSION"] = headers.pop("mcp-protocol-version")
    body = request_body("tools/call", name="list_outbox", _meta=mcp.meta())
    response = mcp.post(body, headers)
    assert mcp.result(response)["structuredContent"] == {"emails": []}


def test_base64_header_values_are_decoded(mcp: Mcp) -> None:
    encoded = "=?base64?" + base64.b64encode(b"list_outbox").decode() + "?="
    headers = {**mcp.headers("tools/call"), "Mcp-Name": encoded}
    body = request_body("tools/call", name="list_outbox", _meta=mcp.meta())
    assert mcp.result(mcp.post(body, headers))["resultType"] == "complete"
    # A non-ASCII name only travels base64-encoded; it then reaches the tool lookup.
    name = "clôture"
    headers["Mcp-Name"] = "=?base64?" + base64.b64encode(name.encode()).decode() + "?="
    body = request_body("tools/call", name=name, _meta=mcp.meta())
    error = error_of(mcp.post(body, headers), 400, -32602)
    assert "Unknown tool" in error["message"]
    headers["Mcp-Name"] = "=?base64?not base64!?="
    error_of(mcp.post(body, headers), 400, -32020)


def test_unknown_method(mcp: Mcp) -> None:
    error = error_of(mcp.request("resources/list"), 404, -32601)
    assert "resources/list" in error["message"]


def test_legacy_initialize_without_meta_is_not_served_yet(mcp: Mcp) -> None:
    body = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {}}
    error_of(mcp.post(body, {"Mcp-Method": "initialize"}), 400, -32602)


def test_parse_error(mcp: Mcp) -> None:
    response = mcp.post(None, mcp.headers("tools/list"), raw=b'{"jsonrpc": "2.0", "id": 1,')
    error = error_of(response, 400, -32700)
    assert response.json["id"] is None
    assert error["message"].startswith("Parse error")


@pytest.mark.parametrize(
    "body",
    [
        [{"jsonrpc": "2.0", "id": 1, "method": "tools/list"}],
        "a string",
        {"id": 1, "method": "tools/list"},
        {"jsonrpc": "2.0", "id": 1},
        {"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": [1]},
        {"jsonrpc": "2.0", "id": True, "method": "tools/list"},
        {"jsonrpc": "2.0", "id": 1, "result": {}},
    ],
    ids=["batch", "string", "no-jsonrpc", "no-method", "params-list", "bool-id", "response"],
)
def test_invalid_request(mcp: Mcp, body: Any) -> None:
    error_of(mcp.post(body, mcp.headers("tools/list")), 400, -32600)


def test_notifications_are_accepted_without_a_body(mcp: Mcp) -> None:
    body = {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 1}}
    response = mcp.post(body, mcp.headers("notifications/cancelled"))
    assert response.status_code == 202
    assert response.content == b""


@pytest.mark.parametrize(
    "origin",
    ["http://localhost", "http://localhost:5173", "https://127.0.0.1:8443", "http://[::1]:3000"],
)
def test_local_origins_are_allowed_by_default(mcp: Mcp, origin: str) -> None:
    headers = {**mcp.headers("tools/list"), "Origin": origin}
    assert mcp.result(mcp.post(request_body(_meta=mcp.meta()), headers))["tools"]


@pytest.mark.parametrize(
    "origin",
    [
        "https://evil.example",
        "http://localhost.evil.example",
        "null",
        "file://localhost",
        "http://127.0.0.1:notaport",
    ],
)
def test_other_origins_are_refused(mcp: Mcp, origin: str) -> None:
    headers = {**mcp.headers("tools/call", "close_ticket"), "Origin": origin}
    body = request_body(
        "tools/call", name="close_ticket", arguments={"id": "T-1"}, _meta=mcp.meta()
    )
    response = mcp.post(body, headers)
    assert response.status_code == 403
    assert mcp.http.simulate_get("/mcp", headers={"Origin": origin}).status_code == 403


def test_configured_origins_replace_the_default(tmp_path: Path, mcp: Mcp) -> None:
    configured = make_client(tmp_path, allowed_origins=("https://desk.example.com",))
    body = request_body(_meta=configured.meta())
    ok = {**configured.headers("tools/list"), "Origin": "https://desk.example.com"}
    assert configured.post(body, ok).status_code == 200
    local = {**configured.headers("tools/list"), "Origin": "http://localhost:3000"}
    assert configured.post(body, local).status_code == 403


def test_a_body_over_the_limit_is_413(tmp_path: Path, mcp: Mcp) -> None:
    small = make_client(tmp_path, max_body=2048)
    body = request_body(
        "tools/call", name="close_ticket", arguments={"id": "x" * 4096}, _meta=small.meta()
    )
    response = small.post(body, small.headers("tools/call", "close_ticket"))
    assert response.status_code == 413
    assert "2048" in response.json["error"]["message"]
    fits = request_body(_meta=small.meta())
    assert small.post(fits, small.headers("tools/list")).status_code == 200


def test_the_default_limit_is_one_mebibyte(mcp: Mcp) -> None:
    padding = "x" * (1024 * 1024)
    body = request_body(_meta=mcp.meta(), padding=padding)
    assert mcp.post(body, mcp.headers("tools/list")).status_code == 413


def test_accept_must_allow_json(mcp: Mcp) -> None:
    headers = {**mcp.headers("tools/list"), "Accept": "text/event-stream"}
    assert mcp.post(request_body(_meta=mcp.meta()), headers).status_code == 406
    headers["Accept"] = "*/*"
    assert mcp.post(request_body(_meta=mcp.meta()), headers).status_code == 200


def test_content_type_must_be_json(mcp: Mcp) -> None:
    response = mcp.http.simulate_post(
        "/mcp",
        body=json.dumps(request_body(_meta=mcp.meta())),
        headers={**mcp.headers("tools/list"), "Content-Type": "text/plain"},
    )
    assert response.status_code == 415


def test_is_modern_message_looks_at_meta_and_version_header() -> None:
    from host.protocol import RequestContext
    from host.protocol.jsonrpc import Request
    from host.protocol.revisions import is_modern_message

    def headers(**sent: str) -> RequestContext:
        return RequestContext.http({k.replace("_", "-"): v for k, v in sent.items()})

    modern = Request(1, "tools/list", {"_meta": {"io.modelcontextprotocol/protocolVersion": "x"}})
    legacy = Request(1, "initialize", {"protocolVersion": "2025-06-18"})
    assert is_modern_message(modern, RequestContext())
    assert not is_modern_message(legacy, RequestContext())
    assert not is_modern_message(legacy, headers(mcp_protocol_version="2025-06-18"))
    assert is_modern_message(legacy, headers(mcp_protocol_version=VERSION))
