"""The signed-in person's session cookie, the sign-in's own short cookie, and CSRF tokens.

The session cookie holds only the principal, how it signed in (a static token, or the issuer as
its JWTs do), the scopes, the expiry and a session id, signed
(itsdangerous) with the host's secret: nothing on the server to look up, so every worker and
instance reads it alike. Every form carries a CSRF token: the session id (or, before sign-in,
the sign-in cookie's id) signed for that purpose, so a form posted from elsewhere is refused.
"""

from __future__ import annotations

import hmac
import secrets
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import falcon
from itsdangerous import BadSignature, URLSafeTimedSerializer

from host.auth import AuthMethod, Identity
from host.auth.urls import is_loopback

__all__ = ["SESSION_COOKIE", "SESSION_S", "SIGNIN_COOKIE", "Session", "Sessions"]

SESSION_COOKIE = "host_session"
SIGNIN_COOKIE = "host_signin"
#: How long a session lasts: a working day.
SESSION_S = 8 * 3600
#: How long a sign-in may take at the issuer.
SIGNIN_S = 600
_PATH = "/approvals"
#: The sources a session may name: a cookie naming another reads as no session.
_METHODS: dict[object, AuthMethod] = {"static": "static", "jwt": "jwt", "none": "none"}


@dataclass(frozen=True)
class Session:
    """A signed-in person."""

    principal: str
    scopes: frozenset[str]
    expires: float
    sid: str
    method: AuthMethod = "static"

    @property
    def identity(self) -> Identity:
        """Who the pages act as: the same owner as the same person's calls over MCP."""
        return Identity(principal=self.principal, scopes=self.scopes, method=self.method)

    @property
    def owner(self) -> str:
        """Who owns what the pages show this person (:attr:`Identity.owner`)."""
        return self.identity.owner


class Sessions:
    """Makes and reads the pages' cookies and CSRF tokens.

    Args:
        keys: Signing keys, newest first (the host's secrets: older ones still verify).
        secure: Whether cookies are ``Secure``; None: decided by each request's URL (all but
            plain http on loopback are).
    """

    def __init__(self, keys: Sequence[str], secure: bool | None) -> None:
        self._session = URLSafeTimedSerializer(list(reversed(keys)), salt="host.pages.session")
        self._signin = URLSafeTimedSerializer(list(reversed(keys)), salt="host.pages.signin")
        self._csrf = URLSafeTimedSerializer(list(reversed(keys)), salt="host.pages.csrf")
        self.secure = secure

    def read(self, req: falcon.Request) -> Session | None:
        """The request's session, or None (none, forged, or expired)."""
        data = self._load(self._session, req, SESSION_COOKIE, SESSION_S)
        if not isinstance(data, dict):
            return None
        try:
            session = Session(
                str(data["p"]),
                frozenset(map(str, data["s"])),
                float(data["x"]),
                str(data["i"]),
                _METHODS[data["m"]],
            )
        except (KeyError, TypeError, ValueError):
            return None  # NOTE: a cookie from before ``m`` names no source: sign in again
        return session if session.expires > time.time() else None

    def begin(self, req: falcon.Request, resp: falcon.Response, identity: Identity) -> Session:
        """Sign ``identity`` in: a new session, in its cookie."""
        session = Session(
            identity.principal, identity.scopes, time.time() + SESSION_S,
            secrets.token_urlsafe(16), identity.method,
        )  # fmt: skip
        data = {"p": session.principal, "m": session.method, "s": sorted(session.scopes),
                "x": session.expires}  # fmt: skip
        self._set(
            req, resp, SESSION_COOKIE, self._session.dumps({**data, "i": session.sid}), SESSION_S
        )
        resp.unset_cookie(SIGNIN_COOKIE, path=_PATH)
        return session

    def end(self, resp: falcon.Response) -> None:
        """Sign out: the session cookie is cleared."""
        resp.unset_cookie(SESSION_COOKIE, path=_PATH)

    def signin(self, req: falcon.Request) -> dict[str, Any] | None:
        """What the sign-in cookie holds (its ``id``, and an issuer sign-in's state), or None."""
        data = self._load(self._signin, req, SIGNIN_COOKIE, SIGNIN_S)
        return data if isinstance(data, dict) and isinstance(data.get("id"), str) else None

    def set_signin(self, req: falcon.Request, resp: falcon.Response, data: dict[str, Any]) -> None:
        """Keep ``data`` (with its ``id``) for the sign-in under way."""
        self._set(req, resp, SIGNIN_COOKIE, self._signin.dumps(data), SIGNIN_S)

    def csrf(self, bound_to: str) -> str:
        """A CSRF token for forms of the session (or sign-in) ``bound_to``."""
        return str(self._csrf.dumps(bound_to))

    def csrf_ok(self, token: object, bound_to: str) -> bool:
        """Whether ``token`` is a CSRF token of ``bound_to`` made within a session's length."""
        if not isinstance(token, str) or not token:
            return False
        try:
            value = self._csrf.loads(token, max_age=SESSION_S)
        except BadSignature:
            return False
        return isinstance(value, str) and hmac.compare_digest(value, bound_to)

    def _load(
        self, serializer: URLSafeTimedSerializer, req: falcon.Request, name: str, age: int
    ) -> object:
        values = req.get_cookie_values(name) or []
        for value in values:
            try:
                return serializer.loads(value, max_age=age)
            except BadSignature:
                continue
        return None

    def _set(
        self, req: falcon.Request, resp: falcon.Response, name: str, value: str, age: int
    ) -> None:
        secure = self.secure
        if secure is None:
            secure = not (req.scheme == "http" and is_loopback(req.host))
        resp.set_cookie(
            name, value, max_age=age, path=_PATH, secure=secure, http_only=True,
            same_site="Lax",
        )  # fmt: skip
