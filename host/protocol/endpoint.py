"""One MCP endpoint: the bytes of a message in, a :class:`Reply` out, whatever the transport.

The endpoint parses the message, hands it to the first protocol revision that accepts it, and turns
every error into a JSON-RPC error response with its HTTP status. A revision is anything with
``accepts(message, headers)`` and ``handle(message, headers, principal) -> Reply``; the modern one
accepts everything and so comes last. A legacy revision goes before it and claims ``initialize``
and the messages of its sessions.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from host.errors import ProtocolError
from host.protocol.jsonrpc import INTERNAL_ERROR, Message, error, failure, parse, request_id_of

__all__ = ["Endpoint", "Reply", "Revision"]

log = logging.getLogger("host.protocol")


@dataclass(frozen=True)
class Reply:
    """What to send back for one message.

    Attributes:
        status: The HTTP status (202 with no body for an accepted notification).
        body: The JSON-RPC response, or None.
        headers: Extra HTTP headers (a legacy session id, say).
        stream: Instead of ``body``, server-sent events to stream (``text/event-stream``), for
            revisions that ask questions on the response stream.
    """

    status: int
    body: dict[str, Any] | None = None
    headers: Mapping[str, str] = field(default_factory=dict)
    stream: Iterable[bytes] | None = None


class Revision(Protocol):
    """A protocol revision the endpoint can hand messages to."""

    def accepts(self, message: Message, headers: Mapping[str, str] | None) -> bool:
        """Whether this revision answers ``message``."""
        ...

    def handle(self, message: Message, headers: Mapping[str, str] | None, principal: str) -> Reply:
        """Answer ``message``; raise :class:`ProtocolError` for an error response."""
        ...


class Endpoint:
    """Dispatches each message to the first revision that accepts it.

    Args:
        revisions: In order of preference; the last should accept every message.
    """

    def __init__(self, revisions: Sequence[Revision]) -> None:
        if not revisions:
            raise ValueError("an endpoint needs at least one protocol revision")
        self.revisions = tuple(revisions)

    def handle(self, body: bytes, headers: Mapping[str, str] | None, principal: str) -> Reply:
        """Answer one message.

        Args:
            body: The message as received.
            headers: HTTP headers by lower-case name, or None when the transport has none.
            principal: Who sent it.
        """
        try:
            message = parse(body)
        except ProtocolError as exc:
            log.info(
                "request rejected",
                extra={"event": "request_rejected", "code": exc.code, "reason": exc.message},
            )
            return Reply(exc.http_status, failure(request_id_of(body), exc))
        request_id = getattr(message, "id", None)
        try:
            revision = next(
                (r for r in self.revisions if r.accepts(message, headers)), self.revisions[-1]
            )
            return revision.handle(message, headers, principal)
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
            if request_id is None:
                return Reply(exc.http_status)
            return Reply(exc.http_status, failure(request_id, exc))
        except Exception:
            incident = uuid.uuid4().hex[:12]
            log.exception(
                "internal error",
                extra={"event": "internal_error", "method": message.method, "incident": incident},
            )
            err = error(
                INTERNAL_ERROR,
                f"Internal error (incident {incident}); the details are in the server log",
                {"incident": incident},
            )
            return Reply(
                err.http_status, failure(request_id, err) if request_id is not None else None
            )
