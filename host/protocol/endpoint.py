"""One MCP endpoint: the bytes of a message in, a :class:`Reply` out, whatever the transport.

The endpoint parses the message, hands it to the first era that accepts it, and turns every error
into a JSON-RPC error response with its HTTP status. An era is anything with
``accepts(message, request)`` and ``handle(message, request) -> Reply``; the modern one accepts
everything and so comes last. The legacy era goes before it and claims ``initialize`` and the
messages of its sessions; as the endpoint's :class:`Sessions` it also takes the responses clients
send to its server-to-client requests, and ends sessions. Every method is given the request's
:class:`host.protocol.context.RequestContext`.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from host import ids
from host.errors import ProtocolError, ScopeError, StoreError
from host.frozen import quick_init
from host.protocol.context import RequestContext
from host.protocol.jsonrpc import (
    INTERNAL_ERROR,
    INVALID_REQUEST,
    Message,
    Response,
    error,
    failure,
    internal_error,
    parse_incoming,
    request_id_of,
)

__all__ = ["Endpoint", "Era", "Reply", "Sessions"]

log = logging.getLogger("host.protocol")

#: Seconds a client is asked to wait before retrying when the store cannot be used.
RETRY_AFTER_S = StoreError.RETRY_AFTER_S


@quick_init
@dataclass(frozen=True)
class Reply:
    """What to send back for one message.

    Attributes:
        status: The HTTP status (202 with no body for an accepted notification).
        body: The JSON-RPC response, or None.
        headers: Extra HTTP headers (a legacy session id, say).
        stream: Instead of ``body``, server-sent events to stream (``text/event-stream``), for
            revisions that ask questions on the response stream.
        scopes: With a 403: every scope the call needs, for the transport's challenge.
    """

    status: int
    body: dict[str, Any] | None = None
    headers: Mapping[str, str] = field(default_factory=dict)
    stream: Iterable[bytes] | None = None
    scopes: tuple[str, ...] = ()


class Era(Protocol):
    """The modern or the legacy revisions: something the endpoint can hand messages to."""

    def accepts(self, message: Message, request: RequestContext) -> bool:
        """Whether this era answers ``message``."""
        ...

    def handle(self, message: Message, request: RequestContext) -> Reply:
        """Answer ``message``; raise :class:`ProtocolError` for an error response."""
        ...


class Sessions(Protocol):
    """The revision that keeps sessions: it takes clients' responses, and ends sessions."""

    def handle_response(self, response: Response, request: RequestContext) -> Reply:
        """Take a client's response to a server-to-client request (202 when accepted)."""
        ...

    def end_session(self, request: RequestContext) -> Reply:
        """End the session the headers name (HTTP DELETE)."""
        ...

    def listen(
        self, request: RequestContext, stopping: threading.Event, gone: Callable[[], bool]
    ) -> Reply:
        """Open the stream of the session the headers name (HTTP GET)."""
        ...


class Endpoint:
    """Dispatches each message to the first era that accepts it.

    Args:
        eras: In order of preference; the last should accept every message.
        sessions: The era that keeps sessions, if any: it gets every response a client sends.
    """

    def __init__(self, eras: Sequence[Era], sessions: Sessions | None = None) -> None:
        if not eras:
            raise ValueError("an endpoint needs at least one era")
        self.eras = tuple(eras)
        self.sessions = sessions

    def end_session(self, request: RequestContext) -> Reply | None:
        """End a session (HTTP DELETE); None when no era keeps sessions."""
        if self.sessions is None:
            return None
        try:
            return self.sessions.end_session(request)
        except ProtocolError as exc:
            return Reply(exc.http_status, failure(None, exc))

    def listen(
        self, request: RequestContext, stopping: threading.Event, gone: Callable[[], bool]
    ) -> Reply | None:
        """A session's stream of server messages (HTTP GET); None when no era keeps sessions.

        Args:
            request: The request, naming the session.
            stopping: Set when this process stops serving: the stream then ends.
            gone: Whether the client has gone away.
        """
        if self.sessions is None:
            return None
        try:
            return self.sessions.listen(request, stopping, gone)
        except ProtocolError as exc:
            return Reply(exc.http_status, failure(None, exc))

    def handle(self, body: bytes, request: RequestContext) -> Reply:
        """Answer one message.

        Args:
            body: The message as received.
            request: Who sent it, over what.
        """
        try:
            message = parse_incoming(body)
            if isinstance(message, Response) and self.sessions is None:
                raise error(INVALID_REQUEST, "Invalid request: responses are not accepted here")
        except ProtocolError as exc:
            log.info(
                "request rejected",
                extra={"event": "request_rejected", "code": exc.code, "reason": exc.message},
            )
            return Reply(exc.http_status, failure(request_id_of(body), exc))
        if isinstance(message, Response):
            return self._response(message, request)
        request_id = getattr(message, "id", None)
        try:
            for era in self.eras:  # NOTE: a loop, not next() over a generator: one call less
                if era.accepts(message, request):
                    return era.handle(message, request)
            return self.eras[-1].handle(message, request)
        except ProtocolError as exc:
            log.info(
                "request rejected",
                extra={
                    "event": "request_rejected",
                    "method": message.method,
                    "code": exc.code,
                    "reason": exc.message,
                },
            )
            scopes = exc.needed if isinstance(exc, ScopeError) else ()
            # NOTE: a notification gets no response, but over HTTP its error status carries a
            # JSON-RPC error with a null id, so the client can read why (stdio drops it).
            error_body = failure(request_id, exc)
            headers = {"Retry-After": _retry_after(exc)} if exc.http_status == 429 else {}
            return Reply(exc.http_status, error_body, headers, scopes=scopes)
        except StoreError as exc:
            return _unavailable(message.method, request_id, exc)
        except Exception:
            return _internal_error(message.method, request_id)

    def _response(self, response: Response, request: RequestContext) -> Reply:
        assert self.sessions is not None
        try:
            return self.sessions.handle_response(response, request)
        except ProtocolError as exc:
            log.info(
                "response rejected",
                extra={"event": "response_rejected", "code": exc.code, "reason": exc.message},
            )
            # NOTE: an error about a response has no request to answer: its id is null.
            return Reply(exc.http_status, failure(None, exc))
        except StoreError as exc:
            return _unavailable(None, None, exc)
        except Exception:
            return _internal_error(None, None)


def _retry_after(exc: ProtocolError) -> str:
    """The seconds a limit's error names (``data.retryAfter``), else the usual wait."""
    data = exc.data if isinstance(exc.data, dict) else {}
    return str(data.get("retryAfter", RETRY_AFTER_S))


def _unavailable(method: str | None, request_id: Any, exc: StoreError) -> Reply:
    """503 for a store that cannot be used now (down, refusing writes, its file deleted).

    NOTE: the reason (it may name a server path) stays in the log, under an incident id the
    client also gets; ``/readyz`` says the same to the load balancer.
    """
    incident = ids.incident()
    log.error(
        "store unavailable",
        extra={
            "event": "store_unavailable",
            "method": method,
            "incident": incident,
            "reason": exc.message,
        },
    )
    err = ProtocolError(
        INTERNAL_ERROR,
        f"Service unavailable: the host's store cannot be used now (incident {incident}); "
        "try again later",
        {"incident": incident},
        http_status=503,
    )
    body = failure(request_id, err) if request_id is not None else None
    return Reply(503, body, {"Retry-After": str(RETRY_AFTER_S)})


def _internal_error(method: str | None, request_id: Any) -> Reply:
    err = internal_error(method)
    return Reply(err.http_status, failure(request_id, err) if request_id is not None else None)
