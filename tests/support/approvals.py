"""What the approval tests share: the fixture specs, the people, a served site and its calls."""

from __future__ import annotations

import http.client
import json
import os
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from host.auth.tokenfile import create_token
from support.paths import ROOT
from support.servers import Server
from support.wire import send

__all__ = [
    "SCOPES",
    "SECRET",
    "SPECS",
    "SURE",
    "VERSION",
    "Site",
    "make_tokens",
    "round_trip",
    "unique",
]


SPECS = ROOT / "tests" / "fixtures" / "approve" / "specs"
VERSION = "2026-07-28"
SURE = {"sure": {"action": "accept", "content": {"confirm": True}}}
SECRET = "one-secret-for-every-instance-0123456789abcdef0123456789"
SCOPES = {"alice": ["ops:approve"], "bob": ["ops:approve"], "carol": ["ops"], "dave": []}


@dataclass
class Site:
    servers: list[Server]
    tokens: dict[str, str]
    acts: Path

    def call(self, who: str, tool: str, service: str, index: int = 0) -> dict[str, Any]:
        """A whole modern call by ``who``, ticking the confirm; its result."""
        conn = http.client.HTTPConnection("127.0.0.1", self.servers[index].port, timeout=60)
        result = round_trip(conn, self.tokens[who], tool, {"service": service})
        if result.get("resultType") == "input_required":
            extra = {"inputResponses": SURE, "requestState": result["requestState"]}
            result = round_trip(conn, self.tokens[who], tool, {"service": service}, **extra)
        return result

    def api(
        self, who: str, method: str, path: str, body: Any = None, index: int = 0
    ) -> tuple[int, Any]:
        conn = self.servers[index].connect()
        headers = {"Authorization": f"Bearer {self.tokens[who]}"}
        if body is not None:
            headers["Content-Type"] = "application/json"
        conn.request(method, "/approvals/api/requests" + path,
                     None if body is None else json.dumps(body), headers)  # fmt: skip
        response = conn.getresponse()
        return response.status, json.loads(response.read() or b"null")

    def pending(self, who: str, service: str, index: int = 0) -> list[dict[str, Any]]:
        status, body = self.api(who, "GET", "?status=pending", index=index)
        assert status == 200, body
        return [r for r in body["requests"] if r["arguments"].get("service") == service]

    def wait_pending(self, who: str, service: str, index: int = 0) -> dict[str, Any]:
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            found = self.pending(who, service, index)
            if found:
                return found[0]
            time.sleep(0.05)
        raise AssertionError(f"no pending request for {service}")

    def acted(self, service: str) -> list[dict[str, Any]]:
        if not self.acts.exists():
            return []
        lines = [json.loads(line) for line in self.acts.read_text().splitlines()]
        return [a for a in lines if a["service"] == service]


def round_trip(
    conn: http.client.HTTPConnection, token: str, tool: str, arguments: dict[str, Any], **extra: Any
) -> dict[str, Any]:
    params = {
        "name": tool,
        "arguments": arguments,
        **extra,
        "_meta": {
            "io.modelcontextprotocol/protocolVersion": VERSION,
            "io.modelcontextprotocol/clientCapabilities": {"elicitation": {"form": {}}},
        },
    }
    body = {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": params}
    headers = {"MCP-Protocol-Version": VERSION, "Mcp-Method": "tools/call", "Mcp-Name": tool,
               "Authorization": f"Bearer {token}"}  # fmt: skip
    payload = json.loads(send(conn, body, **headers).read())
    assert "result" in payload, payload
    result: dict[str, Any] = payload["result"]
    return result


def make_tokens(folder: Path) -> tuple[Path, dict[str, str]]:
    path = folder / "tokens"
    return path, {name: create_token(path, name, scopes)[0] for name, scopes in SCOPES.items()}


def unique(name: str) -> str:
    return f"{name}-{os.urandom(4).hex()}"
