"""``/mcp``: MCP Streamable HTTP, one JSON-RPC message per POST, from a caller the gate let in.

This module adapts HTTP to the protocol layer and nothing more: it checks what only HTTP knows
(``Origin``, body size, media types), hands the body and headers to the endpoint, and writes the
reply. Every JSON-RPC rule lives in :mod:`host.protocol`. Each method answers from the WSGI environ
with an :class:`~host.web.front.Answer`, which Falcon's responders and the front door
(:mod:`host.web.front`) both write: every rule here has one owner, whichever writes it.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator, Mapping
from functools import lru_cache
from typing import Any
from urllib.parse import urlsplit

import falcon

from host import jsonvalues
from host.auth import Identity
from host.errors import ProtocolError
from host.limits import CALLER, note_refused
from host.protocol import Endpoint, Reply, RequestContext
from host.protocol.context import media_types
from host.protocol.jsonrpc import INVALID_REQUEST, error, failure, request_id_of
from host.settings import Settings
from host.web.admission import Admission, Held
from host.web.auth import Gate
from host.web.front import RAISED, Answer
from host.web.lifecycle import STOPPING, client_gone, until_gone

__all__ = ["EnvironHeaders", "McpResource", "origin_allowed", "request_context"]

log = logging.getLogger("host.web")

Environ = dict[str, Any]

_LOCAL_HOSTS = frozenset({"localhost", "127.0.0.1", "[::1]", "::1"})


class EnvironHeaders(Mapping[str, str]):
    """A request's headers by lower-case name, read from the WSGI environ when asked for.

    NOTE: the protocol looks up a handful of headers per request; copying all of them into a
    dict first cost more than every lookup together.
    """

    __slots__ = ("_environ",)

    def __init__(self, environ: Mapping[str, Any]) -> None:
        self._environ = environ

    def __getitem__(self, name: str) -> str:
        value = self.get(name)
        if not isinstance(value, str):
            raise KeyError(name)
        return value

    def get(self, name: str, default: Any = None) -> Any:
        """The header's value, or ``default`` when the request has none.

        NOTE: Mapping's own ``get`` raises and catches a KeyError for each absent header, and
        most of those the protocol asks for (trace context, a session id) are absent.
        """
        value = self._environ.get(_ENVIRON_KEYS.get(name) or _environ_key(name))
        return value if isinstance(value, str) else default

    def __iter__(self) -> Iterator[str]:
        for key, value in self._environ.items():
            if isinstance(value, str) and (key.startswith("HTTP_") or key in _UNPREFIXED):
                yield key.removeprefix("HTTP_").replace("_", "-").lower()

    def __len__(self) -> int:
        return sum(1 for _ in self)


_UNPREFIXED = frozenset({"CONTENT_TYPE", "CONTENT_LENGTH"})
#: Each header name the protocol asked for, and its key in the WSGI environ (a few dozen names).
_ENVIRON_KEYS: dict[str, str] = {}


def _environ_key(name: str) -> str:
    """The WSGI environ's key for the header ``name`` (kept for the next request)."""
    key = name.upper().replace("-", "_")
    key = _ENVIRON_KEYS[name] = key if key in _UNPREFIXED else "HTTP_" + key
    return key


def request_context(environ: Environ, identity: Identity) -> RequestContext:
    """The protocol's view of an HTTP request: its headers and who is calling."""
    return RequestContext.http(EnvironHeaders(environ), identity)


def origin_allowed(origin: str | None, allowed: tuple[str, ...]) -> bool:
    """Whether a request's ``Origin`` may call.

    No ``Origin`` (not a browser) is allowed. With no list configured, only local origins
    (``http(s)://localhost``, ``127.0.0.1``, ``[::1]``, any port) are; with a list, exactly
    those (``*`` allows any).
    """
    if origin is None:
        return True
    origin = origin.strip().rstrip("/").lower()
    if allowed:
        return "*" in allowed or origin in {a.rstrip("/").lower() for a in allowed}
    try:
        parts = urlsplit(origin)
        host = parts.hostname
        _ = parts.port  # NOTE: raises ValueError for a malformed port
    except ValueError:
        return False
    if parts.scheme not in ("http", "https") or host is None:
        return False
    return host in _LOCAL_HOSTS or f"[{host}]" in _LOCAL_HOSTS


def _json_error(answer: Answer, status: int, message: str) -> Answer:
    answer.json_error(status, failure(None, error(INVALID_REQUEST, message)))
    return answer


class McpResource:
    """``/mcp``: one JSON-RPC message per POST, from a caller the gate let in.

    Args:
        endpoint: The protocol endpoint.
        settings: For the allowed origins, the body limit and the limits per caller.
        gate: Who may call (every request, every method, authenticated first).
    """

    def __init__(self, endpoint: Endpoint, settings: Settings, gate: Gate) -> None:
        self.endpoint = endpoint
        self.settings = settings
        self.gate = gate
        self.admission = Admission(settings.limits, gate.authenticator.enabled)

    def on_post(self, req: falcon.Request, resp: falcon.Response) -> None:
        """:meth:`post`, for Falcon; or the front door's exception, for Falcon to handle."""
        raised = req.env.pop(RAISED, None)
        if raised is not None:
            raise raised
        self.post(req.env, lambda: req.content_length).to_falcon(resp)

    def on_get(self, req: falcon.Request, resp: falcon.Response) -> None:
        """:meth:`get`, for Falcon."""
        self.get(req.env).to_falcon(resp)

    def on_delete(self, req: falcon.Request, resp: falcon.Response) -> None:
        """:meth:`delete`, for Falcon."""
        self.delete(req.env).to_falcon(resp)

    def post(self, environ: Environ, length: int | Callable[[], int | None]) -> Answer:
        """One JSON-RPC message in, one reply out.

        Args:
            environ: The request's WSGI environ.
            length: Its ``Content-Length``, or what reads it (Falcon's, which refuses a bad one)
                once the checks before the body have passed.
        """
        answer = Answer({"cache-control": "no-store"})
        identity = self._caller(environ, answer)
        if identity is None:
            return answer
        if not _accepts_json(environ.get("HTTP_ACCEPT")):
            return _json_error(
                answer, 406, "Not acceptable: the Accept header must allow application/json"
            )
        content_type = environ.get("CONTENT_TYPE")
        if content_type and not _is_json(content_type):
            return _json_error(answer, 415, "Unsupported media type: send application/json")
        body = self._read_body(environ, length if isinstance(length, int) else length(), answer)
        if body is None:
            return answer
        held = self._admit(answer, identity, None, body)
        if held is None:
            return answer
        token = CALLER.set(held.principal)
        try:
            reply = self.endpoint.handle(body, request_context(environ, identity))
        except BaseException:
            held.close()
            raise
        finally:
            CALLER.reset(token)
        return self._write(environ, answer, reply, held)

    def get(self, environ: Environ) -> Answer:
        """A legacy session's stream of server messages; 405 without a session.

        NOTE: the modern revision has no server-to-client stream, so a GET that names no
        session has nothing to open.
        """
        answer = Answer({})
        session = environ.get("HTTP_MCP_SESSION_ID")
        if session is None:
            return self._not_allowed(environ, answer)
        identity = self._caller(environ, answer)
        if identity is None:
            return answer
        answer.headers["cache-control"] = "no-store"
        accept = environ.get("HTTP_ACCEPT") or ""
        if "text/event-stream" not in accept.lower():
            return _json_error(
                answer, 406, "Not acceptable: the Accept header must allow text/event-stream"
            )
        held = self._admit(answer, identity, session, None)
        if held is None:
            return answer
        gone = client_gone(environ)
        try:
            reply = self.endpoint.listen(request_context(environ, identity), STOPPING, gone)
        except BaseException:
            held.close()
            raise
        if reply is None:
            held.close()
            return self._not_allowed(environ, answer)
        return self._write(environ, answer, reply, held)

    def delete(self, environ: Environ) -> Answer:
        """End the legacy session ``Mcp-Session-Id`` names (204); 405 without one.

        NOTE: the modern revision has no sessions, so a DELETE that names none has nothing to end.
        """
        answer = Answer({})
        if environ.get("HTTP_MCP_SESSION_ID") is None:
            return self._not_allowed(environ, answer)
        identity = self._caller(environ, answer)
        if identity is None:
            return answer
        answer.headers["cache-control"] = "no-store"
        reply = self.endpoint.end_session(request_context(environ, identity))
        if reply is None:
            return self._not_allowed(environ, answer)
        return self._write(environ, answer, reply)

    def _admit(
        self, answer: Answer, identity: Identity, session: str | None, body: bytes | None
    ) -> Held | None:
        """The slots of a request within its caller's limits; None after answering 429 (with
        the id of ``body``'s request, when it has one: it is read only then)."""
        try:
            return self.admission.enter(identity, session)
        except ProtocolError as exc:
            log.info(
                "request over a limit",
                extra={"event": "limit_refused", "principal": identity.principal,
                       "reason": exc.message},
            )  # fmt: skip
            note_refused()
            answer.headers["retry-after"] = str(exc.data["retryAfter"])
            request_id = request_id_of(body) if body is not None else None
            answer.json_error(exc.http_status, failure(request_id, exc))
            return None

    def _caller(self, environ: Environ, answer: Answer) -> Identity | None:
        """The caller, once the origin and the token are checked; None when refused."""
        origin = environ.get("HTTP_ORIGIN")
        if not origin_allowed(origin, self.settings.allowed_origins):
            log.warning("origin refused", extra={"event": "origin_refused", "origin": origin})
            _json_error(answer, 403, "Forbidden: this Origin may not call this server")
            return None
        found = self.gate.caller(environ)
        if isinstance(found, Identity):
            return found
        answer.status = 401
        challenge, answer.body = self.gate.refusal(found)
        answer.headers["www-authenticate"] = challenge
        return None

    def _not_allowed(self, environ: Environ, answer: Answer) -> Answer:
        if self._caller(environ, answer) is None:
            return answer
        answer.headers["allow"] = "POST"
        method = environ.get("REQUEST_METHOD")
        return _json_error(
            answer, 405, f"Method not allowed: {method} /mcp; send JSON-RPC with POST"
        )

    def _read_body(self, environ: Environ, length: int | None, answer: Answer) -> bytes | None:
        limit = self.settings.max_body
        if length is not None and length > limit:
            _json_error(answer, 413, f"Request body too large: the limit is {limit} bytes")
            return None
        stream = environ["wsgi.input"]
        if length is not None:
            body: bytes = stream.read(length) if length else b""
            return body
        # NOTE: a chunked body has no Content-Length, and Falcon's bounded stream would read it
        # as empty; the server's own stream knows where a chunked body ends.
        if "chunked" not in environ.get("HTTP_TRANSFER_ENCODING", "").lower():
            return b""
        body = stream.read(limit + 1)
        if len(body) > limit:
            _json_error(answer, 413, f"Request body too large: the limit is {limit} bytes")
            return None
        return body

    def _write(
        self, environ: Environ, answer: Answer, reply: Reply, held: Held | None = None
    ) -> Answer:
        if held is not None and reply.stream is None:
            held.close()
        if reply.status == 429:
            note_refused()  # NOTE: a limit the protocol applies (handler threads, approvals)
        answer.status = reply.status
        headers = answer.headers
        if reply.scopes:
            headers["www-authenticate"] = self.gate.scope_challenge(reply.scopes)
        for name, value in reply.headers.items():
            headers[name.lower()] = value
        if reply.stream is not None:
            headers["content-type"] = "text/event-stream"
            stream = until_gone(reply.stream, client_gone(environ))
            answer.stream = held.stream(stream) if held is not None else stream
        elif reply.body is not None:
            headers["content-type"] = falcon.MEDIA_JSON
            answer.body = jsonvalues.dumps(reply.body).encode()
        return answer


# NOTE: a client sends the same Accept and Content-Type on every request: each distinct one is
# read once.
@lru_cache(maxsize=256)
def _accepts_json(accept: str | None) -> bool:
    return not accept or bool(media_types(accept) & {"application/json", "application/*", "*/*"})


@lru_cache(maxsize=256)
def _is_json(content_type: str) -> bool:
    return content_type.split(";")[0].strip().lower() == falcon.MEDIA_JSON
