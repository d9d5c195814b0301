"""One request's context: who calls, over what, and what the transport can do.

A transport builds a :class:`RequestContext` for each message and hands it to the endpoint with
the message's bytes; every protocol method reads what it needs from it instead of threading
headers and principals through each call.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from host.auth import ANONYMOUS, Identity
from host.frozen import quick_init

__all__ = ["TRACE_KEYS", "RequestContext", "media_types", "trace_context"]

#: The W3C Trace Context fields a request may carry, in ``params._meta`` or as HTTP headers.
TRACE_KEYS = ("traceparent", "tracestate")
#: Longer values are not trace context (``traceparent`` is 55 characters; ``tracestate`` at most
#: 32 members); they are dropped rather than handed to a tracer.
_MAX_TRACE = 512


@quick_init
@dataclass(frozen=True)
class RequestContext:
    """What the protocol layer knows of one request besides its message.

    Attributes:
        identity: Who calls: the authenticated caller, or ``anonymous``.
        headers: The HTTP headers by lower-case name; None on transports without headers (stdio).
        session: A legacy session id the transport holds for the client (stdio keeps the one
            its ``initialize`` returned); over HTTP it comes from the ``Mcp-Session-Id`` header.
        streams: Whether the reply may be a stream of messages (an ``Accept`` that lists
            ``text/event-stream``, or stdio): progress, log messages and legacy questions need it.
    """

    identity: Identity = ANONYMOUS
    headers: Mapping[str, str] | None = None
    session: str | None = None
    streams: bool = False

    @classmethod
    def http(cls, headers: Mapping[str, str], identity: Identity = ANONYMOUS) -> RequestContext:
        """The context of an HTTP request: its headers (lower-case names) and the caller."""
        return cls(
            identity=identity,
            headers=headers,
            session=headers.get("mcp-session-id"),
            streams=_accepts_stream(headers.get("accept")),
        )

    @property
    def principal(self) -> str:
        """Who calls, by name: a token's ``sub``, a static token's name, or ``anonymous``."""
        return self.identity.principal

    @property
    def owner(self) -> str:
        """Who owns what the call keeps (see :attr:`host.auth.identity.Identity.owner`)."""
        return self.identity.owner

    @property
    def scopes(self) -> frozenset[str]:
        """The scopes the caller holds."""
        return self.identity.scopes

    @property
    def claims(self) -> Mapping[str, Any]:
        """The caller's verified token claims (empty without a JWT)."""
        return self.identity.claims

    def header(self, name: str) -> str | None:
        """An HTTP header's value by lower-case name; None when absent or not over HTTP."""
        return None if self.headers is None else self.headers.get(name)


def _accepts_stream(accept: str | None) -> bool:
    """Whether ``Accept`` lists ``text/event-stream``.

    NOTE: only an explicit ``text/event-stream`` counts; a client that sent ``*/*`` or no
    ``Accept`` at all gets plain JSON, which every client reads.
    """
    return bool(accept) and "text/event-stream" in media_types(accept)


@lru_cache(maxsize=256)
def media_types(accept: str) -> frozenset[str]:
    """The media types an ``Accept`` header lists, lower-case, without their parameters.

    NOTE: a client sends the same header on every request: each distinct one is read once.
    """
    return frozenset(part.split(";")[0].strip().lower() for part in accept.split(","))


def trace_context(params: Mapping[str, Any], request: RequestContext) -> dict[str, str]:
    """The caller's W3C trace context: from ``params._meta``, else from the HTTP headers.

    NOTE: MCP's semantic conventions carry ``traceparent`` and ``tracestate`` in the request's
    ``_meta`` (one HTTP request is not one MCP call); clients that only set the HTTP header
    (legacy sessions, proxies) are honoured too. Values are checked by the tracer, not here.
    """
    meta = params.get("_meta")
    # NOTE: a parsed message's objects are dicts: the ABC's check (a Python frame) only for others.
    source: Mapping[str, Any] = meta if type(meta) is dict or isinstance(meta, Mapping) else {}
    if not isinstance(source.get("traceparent"), str):
        source = request.headers if request.headers is not None else {}
    # NOTE: a loop, not two comprehensions: each of those is a function call of its own.
    found: dict[str, str] = {}
    for key in TRACE_KEYS:
        value = source.get(key)
        if isinstance(value, str) and 0 < len(value) <= _MAX_TRACE:
            found[key] = value
    return found
