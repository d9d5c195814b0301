"""The front door: ``POST /mcp`` answered straight from the WSGI environ, the rest by Falcon.

The MCP endpoint's resource (:mod:`host.web.mcp`) answers each request as an :class:`Answer`:
its status, headers and body. Falcon's responders copy an answer onto Falcon's response; for a
``POST /mcp`` with a plain ``Content-Length`` (every MCP call), :class:`HostApp` writes it to the
server itself, with the status line, headers and body Falcon would write.

NOTE: Falcon's request and response objects, its routing and its header handling were about a
tenth of a plain call's bytecodes; one call makes no use of any of it. Everything else (the
probes, the pages, the approvals API, ``GET`` and ``DELETE`` on ``/mcp``, a ``POST`` whose
length Falcon must judge) still goes through Falcon, and so does an exception: it is raised
again inside Falcon's own responder, so Falcon's error handling answers it as before.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable
from typing import Any, Protocol

import falcon
from falcon import code_to_http_status

__all__ = ["RAISED", "Answer", "HostApp", "PostResource"]

#: The environ key under which :class:`HostApp` hands Falcon an exception to handle.
RAISED = "host.web.raised"

StartResponse = Callable[..., Any]


class Answer:
    """An HTTP answer: what Falcon's response would hold, before anything writes it.

    Attributes:
        status: The HTTP status.
        headers: By lower-case name (as Falcon keeps them), in the order they were set.
        body: The body's bytes; None for none (a stream, or an empty 202).
        stream: Instead of ``body``, the chunks of a streamed reply.
    """

    __slots__ = ("body", "headers", "status", "stream")

    def __init__(self, headers: dict[str, str]) -> None:
        self.status = 200
        self.headers = headers
        self.body: bytes | None = None
        self.stream: Iterable[bytes] | None = None

    def json_error(self, status: int, body: Any) -> None:
        """Answer ``status`` with ``body`` as JSON (``json.dumps``, as the errors always were)."""
        self.status = status
        self.headers["content-type"] = falcon.MEDIA_JSON
        self.body = json.dumps(body).encode()

    def to_falcon(self, resp: falcon.Response) -> None:
        """Copy this answer onto Falcon's ``resp``."""
        resp.status = self.status
        for name, value in self.headers.items():
            resp.set_header(name, value)
        if self.stream is not None:
            resp.stream = self.stream
        elif self.body is not None:
            resp.data = self.body

    def start(self, start_response: StartResponse, media_type: str) -> Iterable[bytes]:
        """Write this answer as Falcon writes a response: ``Content-Length`` unless streamed,
        then ``media_type`` when no content type was set.

        NOTE: only for the statuses ``POST /mcp`` answers; never 1xx, 204 or 304, which Falcon
        writes without a body (or a type).
        """
        headers = self.headers
        body = self.body
        if self.stream is None:
            headers["content-length"] = "0" if body is None else str(len(body))
        if "content-type" not in headers:
            headers["content-type"] = media_type
        start_response(code_to_http_status(self.status), list(headers.items()))
        if self.stream is not None:
            return self.stream
        return [] if body is None else [body]


class PostResource(Protocol):
    """What the front door needs of ``/mcp``'s resource."""

    def post(self, environ: dict[str, Any], length: int | Callable[[], int | None]) -> Answer:
        """Answer a ``POST`` whose ``Content-Length`` is ``length`` (or ``length()``)."""
        ...


class HostApp(falcon.App[falcon.Request, falcon.Response]):
    """Falcon's app with the front door: ``POST /mcp`` goes to ``resource.post`` directly.

    Args:
        resource: The ``/mcp`` resource; routed in Falcon too, for the other methods.
    """

    def __init__(self, resource: PostResource) -> None:
        super().__init__()
        self.add_route("/mcp", resource)
        self.resource = resource
        self._post = resource.post

    def __call__(self, env: dict[str, Any], start_response: StartResponse) -> Iterable[bytes]:
        """Answer ``env``'s request: a ``POST /mcp`` here, anything else through Falcon."""
        length = env.get("CONTENT_LENGTH")
        # NOTE: a length Falcon would refuse, or none (a chunked body), is Falcon's to judge.
        if (
            env.get("PATH_INFO") != "/mcp"
            or env.get("REQUEST_METHOD") != "POST"
            or not isinstance(length, str)
            or not (length.isdigit() and length.isascii())
        ):
            return super().__call__(env, start_response)
        try:
            answer = self._post(env, int(length))
        except Exception as exc:
            env[RAISED] = exc
            return super().__call__(env, start_response)
        media_type = self.resp_options.default_media_type
        return answer.start(start_response, media_type or falcon.MEDIA_JSON)
