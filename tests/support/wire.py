"""The wire to a served host: a POST to ``/mcp`` and a ``text/event-stream`` read as it arrives.

Both eras use these over a kept-alive ``http.client`` connection (``Server.connect()``).
"""

from __future__ import annotations

import http.client
import json
from collections.abc import Iterator
from typing import Any

__all__ = ["HEADERS", "send", "sse"]

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
