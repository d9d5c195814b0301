"""What a hostile or unusual HTTP client gets from a real server: framing, keys, secrets, files.

Each test here pins a finding against the first version: a chunked body read as empty, a body
with a key twice accepted (the last one winning), several workers without ``HOST_SECRET`` each
minting their own key (second rounds on another worker failed), and a world-readable data
directory and store.
"""

from __future__ import annotations

import http.client
import json
import stat
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from support.helpdesk import settings_env
from support.modern import VERSION, make_client
from support.servers import Server, gunicorn, host_serve
from support.wire import HEADERS

pytestmark = pytest.mark.served

META = {
    "io.modelcontextprotocol/protocolVersion": VERSION,
    "io.modelcontextprotocol/clientCapabilities": {"elicitation": {"form": {}}},
}


def call_body(name: str, arguments: dict[str, Any], **extra: Any) -> dict[str, Any]:
    params = {"name": name, "arguments": arguments, **extra, "_meta": META}
    return {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": params}


def routing(name: str) -> dict[str, str]:
    return {
        **HEADERS,
        "MCP-Protocol-Version": VERSION,
        "Mcp-Method": "tools/call",
        "Mcp-Name": name,
    }


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    tmp_path = tmp_path_factory.mktemp("hardening")
    with host_serve(
        tmp_path, "host", "--workers", "1", HELPDESK_DB=str(tmp_path / "helpdesk.db")
    ) as running:
        yield running


def test_a_chunked_body_is_read_whole(server: Server) -> None:
    body = json.dumps(call_body("list_outbox", {})).encode()
    conn = server.connect()
    pieces = [body[i : i + 7] for i in range(0, len(body), 7)]
    conn.request("POST", "/mcp", iter(pieces), routing("list_outbox"), encode_chunked=True)
    response = conn.getresponse()
    payload = json.loads(response.read())
    assert response.status == 200, payload
    assert payload["result"]["resultType"] == "complete"


def test_a_chunked_body_over_the_limit_is_413(server: Server) -> None:
    conn = server.connect()
    chunks = (b" " * 65536 for _ in range(20))  # 1.3 MB of whitespace, never a Content-Length
    conn.request("POST", "/mcp", chunks, routing("list_outbox"), encode_chunked=True)
    response = conn.getresponse()
    assert response.status == 413
    assert "too large" in json.loads(response.read())["error"]["message"]


def test_a_key_sent_twice_is_a_parse_error_naming_it(tmp_path: Path, db: Path) -> None:
    mcp = make_client(tmp_path)
    raw = (
        b'{"jsonrpc": "2.0", "id": 7, "method": "tools/list", "method": "tools/call",'
        b' "params": {"name": "list_outbox", "_meta": {}}}'
    )
    response = mcp.post(None, mcp.headers("tools/call", "list_outbox"), raw=raw)
    assert response.status_code == 400
    error = response.json["error"]
    assert error["code"] == -32700
    assert "'method' appears twice" in error["message"]
    assert error["data"] == {"duplicateKey": "method"}
    nested = json.dumps(call_body("close_ticket", {"id": "T-1"})).replace(
        '"id": "T-1"', '"id": "T-1", "id": "T-2"'
    )
    response = mcp.post(None, mcp.headers("tools/call", "close_ticket"), raw=nested.encode())
    assert response.json["error"]["data"] == {"duplicateKey": "id"}


def test_workers_without_a_secret_share_one(tmp_path: Path) -> None:
    env = settings_env(tmp_path)
    with gunicorn(tmp_path, "plain", "--workers", "4", "--threads", "2", **env) as plain:
        for _ in range(10):
            first = json.loads(send(plain.connect(), call_body("close_ticket", {"id": "T-1"})))
            state = first["result"]["requestState"]
            # A new connection each time: it lands on any of the four workers.
            again = call_body("close_ticket", {"id": "T-1"}, requestState=state)
            second = json.loads(send(plain.connect(), again))
            assert second["result"]["resultType"] == "input_required", second
    secret = tmp_path / "data" / "secret"
    assert stat.S_IMODE(secret.stat().st_mode) == 0o600
    assert len(secret.read_text().strip()) >= 32


def send(conn: http.client.HTTPConnection, body: dict[str, Any]) -> bytes:
    conn.request("POST", "/mcp", json.dumps(body), routing(body["params"]["name"]))
    return conn.getresponse().read()


def test_the_data_directory_and_store_are_private(server: Server, tmp_path: Path) -> None:
    data = server.log.parent / "host"
    assert stat.S_IMODE(data.stat().st_mode) == 0o700
    for name in ("secret",):
        path = data / name
        assert stat.S_IMODE(path.stat().st_mode) & 0o077 == 0, name
