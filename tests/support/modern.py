"""The raw 2026-07-28 client, ``Mcp``: over the in-process app, or over HTTP to a served host.

``Mcp`` drives the real Falcon app through ``falcon.testing.TestClient``, with the example
``specs/`` and ``handlers/``, a real SQLite help-desk database and a real SQLite store in
``tmp_path``. It speaks raw JSON-RPC so the tests can see (and break) every byte. Over
``Served(conn)`` it sends the same requests to a served host; ``call`` and ``modern_tools`` are
its one-line uses there.
"""

from __future__ import annotations

import http.client
import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import falcon.testing

from host.spec.model import Project
from host.web.app import create_app
from support.helpdesk import HELPDESK, settings_for
from support.wire import Reply, Served

__all__ = [
    "FORM",
    "VERSION",
    "Answerer",
    "Mcp",
    "accept",
    "app_client",
    "call",
    "make_client",
    "modern_tools",
    "reply",
]

VERSION = "2026-07-28"
FORM: dict[str, Any] = {"elicitation": {"form": {}}}

Answerer = Callable[[str, Mapping[str, Any]], Mapping[str, Any]]


@dataclass
class Mcp:
    """A raw 2026-07-28 client over a Falcon test client (or ``Served``: a served host)."""

    http: falcon.testing.TestClient | Served
    capabilities: dict[str, Any] = field(default_factory=lambda: dict(FORM))
    next_id: int = 1
    token: str | None = None

    def headers(self, method: str, name: str | None = None) -> dict[str, str]:
        """The routing headers a well-behaved client sends (and its bearer token, if any)."""
        headers = {
            "Accept": "application/json, text/event-stream",
            "MCP-Protocol-Version": VERSION,
            "Mcp-Method": method,
        }
        if self.token is not None:
            headers["Authorization"] = f"Bearer {self.token}"
        if name is not None:
            headers["Mcp-Name"] = name
        return headers

    def meta(self, capabilities: Mapping[str, Any] | None = None) -> dict[str, Any]:
        """The per-request ``_meta`` envelope."""
        caps = self.capabilities if capabilities is None else capabilities
        return {
            "io.modelcontextprotocol/protocolVersion": VERSION,
            "io.modelcontextprotocol/clientCapabilities": dict(caps),
            "io.modelcontextprotocol/clientInfo": {"name": "tests", "version": "0"},
        }

    def post(
        self,
        body: Any,
        headers: Mapping[str, str] | None = None,
        *,
        raw: bytes | None = None,
    ) -> falcon.testing.Result | Reply:
        """POST a body (JSON-encoded unless ``raw``) to ``/mcp``."""
        data = raw if raw is not None else json.dumps(body).encode()
        all_headers = {"Content-Type": "application/json", **(headers or {})}
        return self.http.simulate_post("/mcp", body=data, headers=all_headers)

    def request(
        self,
        method: str,
        params: Mapping[str, Any] | None = None,
        *,
        capabilities: Mapping[str, Any] | None = None,
        headers: Mapping[str, str] | None = None,
    ) -> falcon.testing.Result | Reply:
        """Send one well-formed request; returns the raw HTTP result."""
        params = dict(params or {})
        params.setdefault("_meta", self.meta(capabilities))
        name = params.get("name") if method == "tools/call" else None
        body = {"jsonrpc": "2.0", "id": self.next_id, "method": method, "params": params}
        self.next_id += 1
        return self.post(body, headers if headers is not None else self.headers(method, name))

    def call(
        self,
        name: str,
        arguments: Mapping[str, Any] | None = None,
        *,
        responses: Mapping[str, Any] | None = None,
        state: str | None = None,
        capabilities: Mapping[str, Any] | None = None,
    ) -> falcon.testing.Result | Reply:
        """One ``tools/call`` round."""
        params: dict[str, Any] = {"name": name, "arguments": dict(arguments or {})}
        if responses is not None:
            params["inputResponses"] = dict(responses)
        if state is not None:
            params["requestState"] = state
        return self.request("tools/call", params, capabilities=capabilities)

    def result(self, response: falcon.testing.Result | Reply) -> dict[str, Any]:
        """The JSON-RPC result of a 200 response (fails the test otherwise)."""
        assert response.status_code == 200, response.text
        body = response.json
        assert "result" in body, body
        result: dict[str, Any] = body["result"]
        return result

    def run(
        self, name: str, arguments: Mapping[str, Any], answer: Answerer, rounds: int = 5
    ) -> tuple[dict[str, Any], list[dict[str, Any]]]:
        """Call a tool, answering each question with ``answer(key, params)``, to the end.

        Returns:
            The final result, and every ``elicitation/create`` params the tool asked.
        """
        asked: list[dict[str, Any]] = []
        result = self.result(self.call(name, arguments))
        for _ in range(rounds):
            if result["resultType"] != "input_required":
                return result, asked
            requests = result["inputRequests"]
            responses = {}
            for key, request in requests.items():
                assert request["method"] == "elicitation/create"
                asked.append(request["params"])
                responses[key] = dict(answer(key, request["params"]))
            result = self.result(
                self.call(name, arguments, responses=responses, state=result["requestState"])
            )
        raise AssertionError(f"{name} still asks after {rounds} rounds")

    def outbox(self) -> list[str]:
        """The emails sent so far, through the list_outbox tool."""
        result = self.result(self.call("list_outbox"))
        emails: list[str] = result["structuredContent"]["emails"]
        return emails


def app_client(
    tmp_path: Path, project: Project | None = None, **changes: Any
) -> falcon.testing.TestClient:
    """A Falcon test client of a fresh app for the help desk (or ``project``) in ``tmp_path``."""
    app = create_app(settings=settings_for(tmp_path, **changes), project=project or HELPDESK)
    return falcon.testing.TestClient(app)


def make_client(tmp_path: Path, project: Project | None = None, **changes: Any) -> Mcp:
    """A client of a fresh help-desk app in ``tmp_path``."""
    return Mcp(app_client(tmp_path, project, **changes))


def accept(content: Mapping[str, Any]) -> Answerer:
    """An answerer that accepts every question with ``content``."""
    return lambda key, params: {"action": "accept", "content": dict(content)}


def reply(action: str) -> Answerer:
    """An answerer that declines or cancels every question."""
    return lambda key, params: {"action": action}


def call(
    conn: http.client.HTTPConnection, name: str, arguments: dict[str, Any], **extra: Any
) -> dict[str, Any]:
    """One modern tools/call on a kept-alive connection to a served host; the JSON-RPC result."""
    params = {"name": name, "arguments": arguments, **extra}
    payload = Mcp(Served(conn)).request("tools/call", params).json
    assert "result" in payload, payload
    result: dict[str, Any] = payload["result"]
    return result


def modern_tools(conn: http.client.HTTPConnection) -> list[str]:
    """The tool names a modern ``tools/list`` on a served host shows."""
    response = Mcp(Served(conn), capabilities={}).request("tools/list")
    assert response.status_code == 200, response.text
    return [tool["name"] for tool in response.json["result"]["tools"]]
