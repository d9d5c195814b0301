"""Who may call, over HTTP: bearer tokens in, 401 and 403 challenges out, and the metadata.

The host is an OAuth 2.1 resource server (MCP "Authorization"). Every request to the MCP endpoint
carries its token in the ``Authorization`` header; :class:`Gate` turns it into the caller's
:class:`host.auth.Identity`, or answers 401 with the ``WWW-Authenticate`` challenge that points
clients at the protected resource metadata (:class:`MetadataResource`, RFC 9728). A call the
caller's scopes do not cover comes back from the protocol layer as a 403, which gets the
``insufficient_scope`` challenge naming every scope the call needs.

Which check failed stays in the log: a client learns ``invalid_token`` and nothing more.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import falcon
from falcon.uri import parse_query_string

from host.auth import (
    Authenticator,
    AuthError,
    Identity,
    insufficient_scope_challenge,
    protected_resource_metadata,
    unauthorized_challenge,
)
from host.protocol import Refusal, notify_refused

__all__ = ["QUERY_TOKENS", "Gate", "MetadataResource"]

log = logging.getLogger("host.web.auth")

#: Query parameters that carry tokens in other protocols; MCP allows the header only.
QUERY_TOKENS = ("access_token", "token", "bearer")


class Gate:
    """Authenticates the requests of the MCP endpoint.

    Args:
        authenticator: Checks tokens (built once per worker).
        scopes: Every scope the server's tools need: named in a 401 challenge, listed in the
            protected resource metadata.
        observers: Told about every request refused 401 (:class:`host.protocol.Refusal`).
    """

    def __init__(
        self,
        authenticator: Authenticator,
        scopes: Iterable[str] = (),
        *,
        observers: Sequence[object] = (),
    ) -> None:
        self.authenticator = authenticator
        self.settings = authenticator.settings
        self.scopes = tuple(sorted(set(scopes)))
        self.observers = tuple(observers)

    def identify(self, req: falcon.Request, resp: falcon.Response) -> Identity | None:
        """The caller of ``req``; None after answering it with 401 (nothing else may run)."""
        found = self.caller(req.env)
        if isinstance(found, AuthError):
            self.refuse(resp, found)
            return None
        return found

    def caller(self, environ: Mapping[str, Any]) -> Identity | AuthError:
        """The caller of the request of ``environ``, or why its token is refused.

        NOTE: a token in the query string is refused even next to a good header: URLs end up
        in logs and browser histories, and MCP allows the header only. The query is read as
        Falcon reads ``req.params``.
        """
        query = environ.get("QUERY_STRING")
        try:
            if query and any(name in parse_query_string(query, True) for name in QUERY_TOKENS):
                raise AuthError("invalid_token", "a token in the query string")
            return self.authenticator.authenticate(environ.get("HTTP_AUTHORIZATION"))
        except AuthError as exc:
            return exc

    def refuse(self, resp: falcon.Response, exc: AuthError) -> None:
        """Answer 401 with the challenge, for a token refused at the door or at a decision."""
        resp.status = 401
        challenge, resp.data = self.refusal(exc)
        resp.set_header("WWW-Authenticate", challenge)

    def refusal(self, exc: AuthError) -> tuple[str, bytes]:
        """The ``WWW-Authenticate`` challenge and the JSON body of a 401 for ``exc`` (logged,
        and told to the observers)."""
        log.info(
            "request refused",
            extra={"event": "auth_refused", "kind": exc.kind, "reason": exc.reason},
        )
        notify_refused(self.observers, Refusal("unauthenticated", exc.kind))
        body = {"error": exc.kind, "error_description": str(exc)}
        challenge = unauthorized_challenge(self.settings, exc.kind, self.scopes)
        return challenge, json.dumps(body, ensure_ascii=False).encode()

    def scope_challenge(self, needed: Sequence[str]) -> str:
        """The ``insufficient_scope`` challenge of a 403 the protocol layer answered."""
        return insufficient_scope_challenge(self.settings, needed)


class MetadataResource:
    """The protected resource metadata (RFC 9728), served without authentication."""

    def __init__(self, gate: Gate) -> None:
        self.document = protected_resource_metadata(gate.settings, gate.scopes)

    def on_get(self, req: falcon.Request, resp: falcon.Response) -> None:
        """The document, cacheable for a while: it changes only with the deployment."""
        resp.set_header("Cache-Control", "max-age=300")
        resp.media = self.document
