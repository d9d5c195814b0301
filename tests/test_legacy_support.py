"""Shared helpers for the legacy-session tests: a raw legacy client over the WSGI app.

The client speaks raw JSON-RPC so tests see every byte. A ``tools/call`` whose answer is a
``text/event-stream`` is driven through the WSGI callable itself, so a test can read the first
question, POST its answer while the stream waits, and then read the rest: what a real client does.
``post`` does the same for any body and headers (a modern call too); ``json_body`` reads a reply
that is not a stream.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import falcon
import falcon.testing
from test_modern_support import app_client, write_project

from host.spec import load_project
from host.spec.model import Project

NEWEST = "2025-11-25"
FORM: dict[str, Any] = {"elicitation": {"form": {}}}


@dataclass
class Events:
    """The server-sent events of one streamed response, read as the test asks for them."""

    status: str
    headers: dict[str, str]
    chunks: Iterator[bytes]
    keepalives: int = 0

    def next(self) -> dict[str, Any]:
        """The next JSON-RPC message (keep-alive comments are counted, not returned)."""
        for chunk in self.chunks:
            text = chunk.decode("utf-8")
            if text.startswith(":"):
                self.keepalives += 1
                continue
            assert text.startswith("event: message\ndata: "), text
            assert text.endswith("\n\n"), text
            message: dict[str, Any] = json.loads(text.split("data: ", 1)[1])
            return message
        raise AssertionError("the stream ended")

    def rest(self) -> list[dict[str, Any]]:
        """Every message left, to the end of the stream."""
        messages = []
        while True:
            try:
                messages.append(self.next())
            except AssertionError as exc:
                if str(exc) == "the stream ended":
                    return messages
                raise


def post(http: falcon.testing.TestClient, headers: Mapping[str, str], body: Any) -> Events:
    """POST through the WSGI callable itself, so a streamed body is read as it is produced."""
    environ = falcon.testing.create_environ(
        "/mcp",
        method="POST",
        headers={"Content-Type": "application/json", **headers},
        body=json.dumps(body),
    )
    started: dict[str, Any] = {}

    def start_response(status: str, headers: list[tuple[str, str]], *_: Any) -> Any:
        started["status"] = status
        started["headers"] = {k.lower(): v for k, v in headers}

    chunks = iter(http.app(environ, start_response))
    return Events(started["status"], started["headers"], chunks)


def json_body(events: Events) -> dict[str, Any]:
    """The one JSON body of a reply that is not a stream."""
    assert events.headers["content-type"].startswith("application/json"), events.headers
    body: dict[str, Any] = json.loads(b"".join(events.chunks))
    return body


@dataclass
class Legacy:
    """A raw legacy client of one WSGI app."""

    http: falcon.testing.TestClient
    session: str | None = None
    version: str | None = None
    next_id: int = 1
    extra: dict[str, str] = field(default_factory=dict)

    def headers(self, **more: str) -> dict[str, str]:
        headers = {
            "Accept": "application/json, text/event-stream",
            "Content-Type": "application/json",
        }
        if self.session is not None:
            headers["Mcp-Session-Id"] = self.session
        if self.version is not None:
            headers["MCP-Protocol-Version"] = self.version
        headers.update(self.extra)
        headers.update(more)
        return headers

    def post(self, body: Any, **headers: str) -> falcon.testing.Result:
        return self.http.simulate_post(
            "/mcp", body=json.dumps(body).encode(), headers=self.headers(**headers)
        )

    def initialize(
        self,
        version: str = NEWEST,
        capabilities: Mapping[str, Any] | None = None,
        *,
        initialized: bool = True,
    ) -> dict[str, Any]:
        """Open a session; returns the initialize result."""
        params = {
            "protocolVersion": version,
            "capabilities": dict(FORM if capabilities is None else capabilities),
            "clientInfo": {"name": "legacy-tests", "version": "0"},
        }
        self.session = self.version = None
        response = self.post({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": params})
        assert response.status_code == 200, response.text
        self.session = response.headers["mcp-session-id"]
        result: dict[str, Any] = response.json["result"]
        self.version = result["protocolVersion"]
        if initialized:
            done = self.post({"jsonrpc": "2.0", "method": "notifications/initialized"})
            assert done.status_code == 202, done.text
        return result

    def body(self, method: str, params: Mapping[str, Any] | None = None) -> dict[str, Any]:
        body = {
            "jsonrpc": "2.0",
            "id": self.next_id,
            "method": method,
            "params": dict(params or {}),
        }
        self.next_id += 1
        return body

    def request(
        self, method: str, params: Mapping[str, Any] | None = None, **headers: str
    ) -> falcon.testing.Result:
        return self.post(self.body(method, params), **headers)

    def result(self, response: falcon.testing.Result) -> dict[str, Any]:
        assert response.status_code == 200, response.text
        assert response.headers["content-type"].startswith("application/json"), response.headers
        body = response.json
        assert "result" in body, body
        result: dict[str, Any] = body["result"]
        return result

    def tools(self) -> list[dict[str, Any]]:
        tools: list[dict[str, Any]] = self.result(self.request("tools/list"))["tools"]
        return tools

    def call(self, name: str, arguments: Mapping[str, Any] | None = None) -> dict[str, Any]:
        """A ``tools/call`` answered with JSON; its result."""
        return self.result(self.request("tools/call", {"name": name, "arguments": arguments or {}}))

    def stream(self, name: str, arguments: Mapping[str, Any] | None = None) -> Events:
        """A ``tools/call`` answered with an event stream, read lazily."""
        body = self.body("tools/call", {"name": name, "arguments": dict(arguments or {})})
        return post(self.http, self.headers(), body)

    def answer(
        self, question: Mapping[str, Any], result: Mapping[str, Any]
    ) -> falcon.testing.Result:
        """POST the JSON-RPC response to a server-to-client request."""
        return self.post({"jsonrpc": "2.0", "id": question["id"], "result": dict(result)})

    def outbox(self) -> list[str]:
        result = self.call("list_outbox")
        emails: list[str] = (
            result["structuredContent"]["emails"]
            if "structuredContent" in result
            else json.loads(result["content"][0]["text"])["emails"]
        )
        return emails


def legacy_client(tmp_path: Path, project: Project | None = None, **changes: Any) -> Legacy:
    """A legacy client of a fresh help-desk app (or ``project``) in ``tmp_path``."""
    return Legacy(app_client(tmp_path, project, **changes))


def structured(result: Mapping[str, Any]) -> Any:
    """A result's structured content, or its JSON text for revisions without it."""
    if "structuredContent" in result:
        return result["structuredContent"]
    return json.loads(result["content"][0]["text"])


SURVEY_SERVER = """\
kind: server
name: survey
version: "1"
elicitation: {enabled: true}
"""

SURVEY_TOOL = """\
kind: tool
name: survey
description: Two questions in one round, with every kind of field, then an act.
input: {}
steps:
  - ask: who
    message: Who are you?
    form:
      name: {type: string, default: Ann, description: Your name}
      team:
        type: string
        oneOf: [{const: red, title: Red team}, {const: blue, title: Blue team}]
      tags: {type: array, items: {type: string, enum: [a, b, c]}, default: [a]}
  - ask: when
    message: Which day?
    form:
      day: {type: string, enum: [mon, tue]}
      urgent: {type: boolean, default: false}
    declined: {recorded: false}
  - act: survey:record
"""

SURVEY_HANDLER = """\
def record(name, team, tags, day, urgent):
    return {"name": name, "team": team, "tags": tags, "day": day, "urgent": urgent}
"""


def survey_project(tmp_path: Path) -> Project:
    """A small project whose one tool asks two questions in one round."""
    return load_project(
        *write_project(
            tmp_path, SURVEY_SERVER, SURVEY_TOOL, SURVEY_HANDLER, module="survey", prefix="survey-"
        )
    )
