"""What the client puts on the wire and reads back: modern requests, headers, replies.

Nothing here knows pytest; :mod:`host.client.mcp` builds on it, and so do ``host call`` and the
test kit. A :class:`Transport` carries one HTTP POST; :class:`WsgiTransport` drives a WSGI app
in-process through ``falcon.testing``, so tests exercise the real routes, headers and status codes.
"""

from __future__ import annotations

import base64
import copy
import http.client
import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol
from urllib.parse import urlsplit

from falcon import testing as falcon_testing

from host.errors import HostError
from host.protocol.jsonrpc import (
    ELICITATION_DISABLED,
    HEADER_MISMATCH,
    INTERNAL_ERROR,
    INVALID_PARAMS,
    INVALID_REQUEST,
    METHOD_NOT_FOUND,
    MISSING_CAPABILITY,
    PARSE_ERROR,
    UNSUPPORTED_VERSION,
)
from host.protocol.revisions import MODERN as MODERN_REVISION

__all__ = [
    "CLIENT_INFO",
    "ERROR_NAMES",
    "META_CAPABILITIES",
    "META_CLIENT_INFO",
    "META_VERSION",
    "MODERN",
    "HttpReply",
    "HttpTransport",
    "RawResponse",
    "RpcError",
    "Transport",
    "WsgiTransport",
    "authorized",
    "error_code",
    "header_value",
    "request_headers",
]

MODERN = MODERN_REVISION.version
META_VERSION = "io.modelcontextprotocol/protocolVersion"
META_CAPABILITIES = "io.modelcontextprotocol/clientCapabilities"
META_CLIENT_INFO = "io.modelcontextprotocol/clientInfo"
CLIENT_INFO: Mapping[str, str] = {"name": "host-testing", "version": "1"}

#: Names a test may use instead of a JSON-RPC code (``INVALID_INPUT`` is the seed tutorial's).
ERROR_NAMES: Mapping[str, int] = {
    "PARSE_ERROR": PARSE_ERROR,
    "INVALID_REQUEST": INVALID_REQUEST,
    "METHOD_NOT_FOUND": METHOD_NOT_FOUND,
    "INVALID_PARAMS": INVALID_PARAMS,
    "INVALID_INPUT": INVALID_PARAMS,
    "INTERNAL_ERROR": INTERNAL_ERROR,
    "HEADER_MISMATCH": HEADER_MISMATCH,
    "MISSING_CAPABILITY": MISSING_CAPABILITY,
    "UNSUPPORTED_VERSION": UNSUPPORTED_VERSION,
    "ELICITATION_DISABLED": ELICITATION_DISABLED,
}


def error_code(code: int | str) -> int:
    """A JSON-RPC code from a number or one of :data:`ERROR_NAMES`.

    Raises:
        ValueError: An unknown name; the message lists the known ones.
    """
    if isinstance(code, int):
        return code
    try:
        return ERROR_NAMES[code.upper()]
    except KeyError:
        known = ", ".join(sorted(ERROR_NAMES))
        raise ValueError(
            f"unknown JSON-RPC error name {code!r}; use a number or one of {known}"
        ) from None


@dataclass(frozen=True)
class RpcError:
    """A JSON-RPC error object as the server sent it."""

    code: int
    message: str
    data: Any = None

    @classmethod
    def from_json(cls, value: Any) -> RpcError:
        """Read an ``error`` member, tolerating a malformed one (it shows up in the message)."""
        if not isinstance(value, Mapping):
            return cls(0, f"malformed error member: {value!r}")
        code = value.get("code")
        return cls(
            code if isinstance(code, int) else 0, str(value.get("message", "")), value.get("data")
        )

    def __str__(self) -> str:
        text = f"JSON-RPC error {self.code}: {self.message}"
        if self.data is not None:
            text += f" (data: {json.dumps(self.data, ensure_ascii=False, default=str)})"
        return text


@dataclass(frozen=True)
class HttpReply:
    """One HTTP response: status, headers (names lower-cased) and body bytes."""

    status: int
    headers: Mapping[str, str]
    body: bytes


class Transport(Protocol):
    """Carries one HTTP request to the server under test."""

    def send(
        self, method: str, path: str, body: bytes | None, headers: Mapping[str, str]
    ) -> HttpReply:
        """Send one request and return the whole response."""
        ...

    def with_token(self, token: str | None) -> Transport:
        """The same server, called with another bearer token (None: none)."""
        ...


class WsgiTransport:
    """A WSGI app called in-process through :class:`falcon.testing.TestClient`.

    Args:
        app: The WSGI application (``host.web.app.create_app(...)``).
        token: A bearer token sent with every request that carries no ``Authorization`` of its
            own.
    """

    def __init__(self, app: Callable[..., Any], *, token: str | None = None) -> None:
        self.app = app
        self.http = falcon_testing.TestClient(app)
        self.token = token

    def with_token(self, token: str | None) -> WsgiTransport:
        """The same app, another caller."""
        other = copy.copy(self)
        other.token = token
        return other

    def send(
        self, method: str, path: str, body: bytes | None, headers: Mapping[str, str]
    ) -> HttpReply:
        """Send one request through the app and return its whole response."""
        sent = authorized(headers, self.token)
        result = self.http.simulate_request(method, path, body=body, headers=sent)
        names = {name.lower(): value for name, value in result.headers.items()}
        return HttpReply(result.status_code, names, result.content)


class HttpTransport:
    """One kept-alive HTTP connection to a running host.

    Args:
        url: The host's MCP endpoint (``http://127.0.0.1:8000/mcp``).
        token: A bearer token sent with every request that carries no ``Authorization`` of its
            own (a protected host).

    Raises:
        HostError: ``url`` is not an http(s) URL.
    """

    def __init__(self, url: str, *, token: str | None = None) -> None:
        parts = urlsplit(url)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise HostError(f"--url must be an http(s) URL like http://127.0.0.1:8000/mcp: {url}")
        factory = (
            http.client.HTTPSConnection if parts.scheme == "https" else http.client.HTTPConnection
        )
        self.conn = factory(parts.hostname, parts.port, timeout=600)
        self.path = parts.path or "/mcp"
        self.token = token

    def with_token(self, token: str | None) -> HttpTransport:
        """The same connection, another caller."""
        other = copy.copy(self)
        other.token = token
        return other

    def send(
        self, method: str, path: str, body: bytes | None, headers: Mapping[str, str]
    ) -> HttpReply:
        """Send one request; connection failures become a clear error."""
        try:
            self.conn.request(method, self.path, body, authorized(headers, self.token))
            response = self.conn.getresponse()
            data = response.read()
        except OSError as exc:
            raise HostError(f"cannot reach the host: {exc}") from None
        return HttpReply(response.status, {k.lower(): v for k, v in response.getheaders()}, data)


def authorized(headers: Mapping[str, str], token: str | None) -> dict[str, str]:
    """``headers`` with ``Authorization: Bearer token`` unless they carry one already."""
    sent = dict(headers)
    if token is not None and not any(name.lower() == "authorization" for name in sent):
        sent["Authorization"] = f"Bearer {token}"
    return sent


@dataclass(frozen=True)
class RawResponse:
    """One exchange's response, parsed as far as it goes.

    Attributes:
        status: The HTTP status.
        headers: The response headers, names lower-cased.
        text: The body as text.
        messages: Every JSON-RPC message in the body: one for ``application/json``, each event's
            data for ``text/event-stream`` (notifications first, the response last).
        body: The JSON-RPC response (the last message), or None when there is none.
    """

    status: int
    headers: Mapping[str, str]
    text: str
    messages: tuple[Any, ...] = ()
    body: Any = None
    request: Any = field(default=None, repr=False)

    @classmethod
    def from_reply(cls, reply: HttpReply, request: Any = None) -> RawResponse:
        """Parse an HTTP reply: JSON, or a server-sent event stream of JSON messages."""
        text = reply.body.decode("utf-8", errors="replace")
        kind = reply.headers.get("content-type", "")
        messages: list[Any] = []
        if "text/event-stream" in kind:
            messages = [_loads(data) for data in _sse_data(text)]
        elif text.strip():
            messages = [_loads(text)]
        body = next((m for m in reversed(messages) if _is_response(m)), None)
        if body is None and messages:
            body = messages[-1]
        return cls(reply.status, reply.headers, text, tuple(messages), body, request)

    @property
    def error(self) -> RpcError | None:
        """The JSON-RPC error, or None."""
        if isinstance(self.body, Mapping) and "error" in self.body:
            return RpcError.from_json(self.body["error"])
        return None

    @property
    def result(self) -> Any:
        """The JSON-RPC result, or None."""
        return self.body.get("result") if isinstance(self.body, Mapping) else None

    def __str__(self) -> str:
        shown = json.dumps(self.body, ensure_ascii=False, default=str) if self.messages else ""
        return f"HTTP {self.status} {shown or repr(self.text[:200])}"


def _is_response(message: Any) -> bool:
    return isinstance(message, Mapping) and ("result" in message or "error" in message)


def _loads(text: str) -> Any:
    try:
        return json.loads(text)
    except ValueError:
        return text


def _sse_data(text: str) -> list[str]:
    """The ``data`` of each event of a ``text/event-stream`` body."""
    events: list[str] = []
    lines: list[str] = []
    for line in text.replace("\r\n", "\n").split("\n"):
        if not line:
            if lines:
                events.append("\n".join(lines))
                lines = []
        elif line.startswith("data:"):
            lines.append(line[5:].removeprefix(" "))
    if lines:
        events.append("\n".join(lines))
    return events


def header_value(value: str) -> str:
    """A header value as MCP sends it: non-ASCII text as ``=?base64?...?=``."""
    if value.isascii() and value.isprintable():
        return value
    return "=?base64?" + base64.b64encode(value.encode("utf-8")).decode("ascii") + "?="


_NAME_PARAM = {
    "tools/call": "name",
    "prompts/get": "name",
    "resources/read": "uri",
    "tasks/get": "taskId",
    "tasks/update": "taskId",
    "tasks/cancel": "taskId",
}


def request_headers(message: Any, protocol: str) -> dict[str, str]:
    """The headers a modern client sends with ``message``.

    ``Mcp-Name`` goes with ``tools/call`` and ``prompts/get`` (``params.name``),
    ``resources/read`` (``params.uri``) and the tasks extension's ``tasks/*``
    (``params.taskId``).
    """
    headers = {
        "Content-Type": "application/json",
        "Accept": "application/json, text/event-stream",
        "MCP-Protocol-Version": protocol,
    }
    if not isinstance(message, Mapping):
        return headers
    method = message.get("method")
    if isinstance(method, str):
        headers["Mcp-Method"] = header_value(method)
    params = message.get("params")
    if isinstance(params, Mapping):
        key = _NAME_PARAM.get(method if isinstance(method, str) else "")
        if key and isinstance(params.get(key), str):
            headers["Mcp-Name"] = header_value(params[key])
    return headers
