"""The raw legacy-session client: ``Legacy`` over the in-process app, ``LegacyHttp`` over HTTP.

``Legacy`` speaks raw JSON-RPC so tests see every byte. A ``tools/call`` whose answer is a
``text/event-stream`` is driven through the WSGI callable itself, so a test can read the first
question, POST its answer while the stream waits, and then read the rest: what a real client does.
``post`` does the same for any body and headers (a modern call too); ``json_body`` reads a reply
that is not a stream. ``LegacyHttp`` is a session with a served host, and ``Listener`` its GET
stream read on a thread.
"""

from __future__ import annotations

import http.client
import json
import threading
import time
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import falcon
import falcon.testing

from host.spec.model import Project
from support.modern import app_client
from support.servers import Server
from support.wire import Reply, Served

__all__ = [
    "FORM",
    "NEWEST",
    "Events",
    "Legacy",
    "LegacyHttp",
    "Listener",
    "json_body",
    "legacy_client",
    "post",
    "structured",
]

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
    """A raw legacy client of one WSGI app (or ``Served``: a served host)."""

    http: falcon.testing.TestClient | Served
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

    def post(self, body: Any, **headers: str) -> falcon.testing.Result | Reply:
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
    ) -> falcon.testing.Result | Reply:
        return self.post(self.body(method, params), **headers)

    def result(self, response: falcon.testing.Result | Reply) -> dict[str, Any]:
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
        # NOTE: reads the stream from the WSGI callable as it is produced: in-process only.
        assert isinstance(self.http, falcon.testing.TestClient), "stream() needs the in-process app"
        return post(self.http, self.headers(), body)

    def answer(
        self, question: Mapping[str, Any], result: Mapping[str, Any]
    ) -> falcon.testing.Result | Reply:
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


class LegacyHttp:
    """A legacy session with a served host: ``Legacy`` over HTTP, a new connection a request."""

    def __init__(self, server: Server, capabilities: dict[str, Any] | None = None) -> None:
        self.server = server
        opening = Legacy(Served(server.connect()))
        self.initialized = opening.initialize(NEWEST, capabilities or {}, initialized=False)
        self.session = opening.session or ""
        assert self.session

    def request(
        self,
        method: str,
        params: dict[str, Any] | None = None,
        conn: http.client.HTTPConnection | None = None,
    ) -> dict[str, Any]:
        """One request of the session (on ``conn``, or a new connection); the response."""
        legacy = Legacy(Served(conn or self.server.connect()), session=self.session)
        response = legacy.request(method, params)
        payload: dict[str, Any] = response.json
        assert response.status_code == 200, payload
        return payload

    def tools(self) -> list[str]:
        """The tool names the session's ``tools/list`` shows."""
        return [tool["name"] for tool in self.request("tools/list")["result"]["tools"]]


class Listener:
    """A legacy session's GET stream, read on a thread, reopened when the server ends it.

    Attributes:
        messages: Every JSON-RPC message received, in order.
        opened: How many times the stream was opened with HTTP 200.
    """

    def __init__(self, client: LegacyHttp, deadline_s: float = 120.0) -> None:
        self.client = client
        self.messages: list[dict[str, Any]] = []
        self.opened = 0
        self.statuses: list[int] = []
        self._stop = threading.Event()
        self._deadline = time.monotonic() + deadline_s
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while not self._stop.is_set() and time.monotonic() < self._deadline:
            # NOTE: longer than the server's 15 s between keep-alives.
            conn = http.client.HTTPConnection("127.0.0.1", self.client.server.port, timeout=60)
            try:
                conn.request(
                    "GET",
                    "/mcp",
                    headers={"Accept": "text/event-stream", "Mcp-Session-Id": self.client.session},
                )
                response = conn.getresponse()
                self.statuses.append(response.status)
                if response.status != 200:
                    response.read()
                    time.sleep(0.5)
                    continue
                self.opened += 1
                while not self._stop.is_set() and (line := response.readline()):
                    if line.startswith(b"data: "):
                        self.messages.append(json.loads(line[len(b"data: ") :]))
            except OSError:
                time.sleep(0.2)
            finally:
                conn.close()
            time.sleep(0.2)  # as SDK clients do, a moment before reconnecting

    def methods(self) -> list[str]:
        """The methods of the messages received so far."""
        return [m.get("method", "") for m in self.messages]

    def stop(self) -> None:
        """Stop listening (the thread ends within its next read or reconnect)."""
        self._stop.set()
