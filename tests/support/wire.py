"""The wire to a served host: a POST to ``/mcp``, a ``text/event-stream`` read as it arrives, and
``Served``, which lets the raw clients of both eras (``Mcp``, ``Legacy``) talk to a served host as
they talk to the in-process app.

All of it over a kept-alive ``http.client`` connection (``Server.connect()``).
"""

from __future__ import annotations

import http.client
import json
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from falcon.util.structures import CaseInsensitiveDict

__all__ = ["HEADERS", "Reply", "Served", "send", "sse"]

#: What every POST to ``/mcp`` carries; a client that takes both answers' forms.
HEADERS = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream"}


def send(conn: http.client.HTTPConnection, body: Any, **headers: str) -> http.client.HTTPResponse:
    """POST a JSON-RPC body to ``/mcp`` on ``conn``; the response, its body not read yet."""
    conn.request("POST", "/mcp", json.dumps(body), {**HEADERS, **headers})
    return conn.getresponse()


def sse(response: http.client.HTTPResponse) -> Iterator[dict[str, Any]]:
    """The JSON-RPC messages of a ``text/event-stream`` response, as they arrive."""
    data = None
    while line := response.readline():
        line = line.rstrip(b"\r\n")
        if line.startswith(b"data: "):
            data = line[len(b"data: ") :]
        elif not line and data is not None:
            yield json.loads(data)
            data = None


@dataclass
class Reply:
    """A served host's whole answer: what the raw clients read of falcon's test ``Result``."""

    status_code: int
    headers: CaseInsensitiveDict
    content: bytes

    @property
    def text(self) -> str:
        """The body, decoded."""
        return self.content.decode()

    @property
    def json(self) -> Any:
        """The body, parsed (an empty one is a ``ValueError``, as ``json.loads`` has it)."""
        return json.loads(self.content)


class Served:
    """A served host as a raw client's ``http``: its requests go on one kept-alive connection."""

    def __init__(self, conn: http.client.HTTPConnection) -> None:
        self.conn = conn

    def simulate_post(
        self, path: str = "/", *, body: bytes = b"", headers: Mapping[str, str] | None = None
    ) -> Reply:
        """POST ``body`` to ``path``; the whole answer."""
        self.conn.request("POST", path, body, dict(headers or {}))
        response = self.conn.getresponse()
        content = response.read()
        return Reply(response.status, CaseInsensitiveDict(response.getheaders()), content)
