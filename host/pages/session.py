"""The signed-in person's session, the sign-in's own short cookie, and CSRF tokens.

A session lives in the store (:mod:`host.store.sessions`, both backends); its cookie carries only
a random session id, signed (itsdangerous) with the host's secret. Signing out deletes the
session, so every copy of the cookie stops working at once; so does ``host sessions revoke``. A
session lasts at most :data:`SESSION_S`, and at most as long as the access token it was signed in
with. It keeps the person's *proof* (a static token's digest, or the access token sealed with a
key derived from the host's secret), so each page can establish the person again
(:meth:`host.pages.Inbox.current`). Every form carries a CSRF token: the session id (or, before
sign-in, the sign-in cookie's id) signed for that purpose, so a form posted from elsewhere is
refused.
"""

from __future__ import annotations

import hmac
import json
import math
import secrets
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import falcon
from itsdangerous import BadSignature, URLSafeTimedSerializer

from host.auth import AuthMethod, Identity
from host.auth.urls import is_loopback
from host.protocol.redaction import FieldCipher
from host.store.sessions import PageSession, SessionBook, session_key

__all__ = ["SESSION_COOKIE", "SESSION_S", "SIGNIN_COOKIE", "Session", "Sessions"]

SESSION_COOKIE = "host_session"
SIGNIN_COOKIE = "host_signin"
#: How long a session lasts at most: a working day.
SESSION_S = 8 * 3600
#: How long a sign-in may take at the issuer.
SIGNIN_S = 600
_PATH = "/approvals"
#: The sources a session may name: a stored session naming another reads as no session.
_METHODS: dict[object, AuthMethod] = {"static": "static", "jwt": "jwt"}


@dataclass(frozen=True)
class Session:
    """A signed-in person."""

    principal: str
    scopes: frozenset[str]
    expires: float
    sid: str
    method: AuthMethod = "static"
    proof: str = ""

    @property
    def identity(self) -> Identity:
        """Who the pages act as: the same owner as the same person's calls over MCP."""
        return Identity(self.principal, self.scopes, method=self.method, proof=self.proof)

    @property
    def owner(self) -> str:
        """Who owns what the pages show this person (:attr:`Identity.owner`)."""
        return self.identity.owner


class Sessions:
    """Makes and reads the pages' cookies, sessions and CSRF tokens.

    Args:
        keys: Signing keys, newest first (the host's secrets: older ones still verify).
        secure: Whether cookies are ``Secure``; None: decided by each request's URL (all but
            plain http on loopback are).
        book: The store's sessions.
    """

    def __init__(self, keys: Sequence[str], secure: bool | None, book: SessionBook) -> None:
        self._session = URLSafeTimedSerializer(list(reversed(keys)), salt="host.pages.session")
        self._signin = URLSafeTimedSerializer(list(reversed(keys)), salt="host.pages.signin")
        self._csrf = URLSafeTimedSerializer(list(reversed(keys)), salt="host.pages.csrf")
        self._cipher = FieldCipher(keys)
        self.secure = secure
        self.book = book

    def read(self, req: falcon.Request) -> Session | None:
        """The request's session, or None (none, forged, signed out, revoked or expired)."""
        for sid in self._ids(req):
            found = self.book.get(sid)
            if found is not None and found.method in _METHODS:
                return Session(
                    found.principal, frozenset(found.scopes), found.expires, sid,
                    _METHODS[found.method], self._unseal(found),
                )  # fmt: skip
        return None

    def begin(self, req: falcon.Request, resp: falcon.Response, identity: Identity) -> Session:
        """Sign ``identity`` in: a new session in the store, its id in the cookie.

        Raises:
            ValueError: ``identity`` has nothing to prove it again, or its token has expired.
        """
        if identity.method not in _METHODS or not identity.proof:
            raise ValueError(f"a session needs a token's proof, not {identity.method!r}")
        now = time.time()
        expires = min(now + SESSION_S, _token_expiry(identity))
        proof = identity.proof if identity.method == "static" else self._seal(identity.proof)
        for old in self._ids(req):
            self.book.end(old)  # NOTE: signing in again replaces the browser's session
        sid = secrets.token_urlsafe(32)
        self.book.open(PageSession(
            session_key(sid), identity.principal, identity.method, tuple(sorted(identity.scopes)),
            proof, now, expires,
        ))  # fmt: skip
        age = min(SESSION_S, math.ceil(expires - now))
        self._set(req, resp, SESSION_COOKIE, str(self._session.dumps(sid)), age)
        resp.unset_cookie(SIGNIN_COOKIE, path=_PATH)
        return Session(
            identity.principal, identity.scopes, expires, sid, identity.method, identity.proof
        )

    def end(self, req: falcon.Request, resp: falcon.Response) -> None:
        """Sign out: the sessions the cookie names are deleted, and the cookie cleared."""
        for sid in self._ids(req):
            self.book.end(sid)
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

    def _ids(self, req: falcon.Request) -> list[str]:
        """The session ids the request's cookies carry, each with a good signature."""
        found = []
        for value in req.get_cookie_values(SESSION_COOKIE) or []:
            try:
                sid = self._session.loads(value, max_age=SESSION_S)
            except BadSignature:
                continue
            if isinstance(sid, str) and sid:
                found.append(sid)
        return found

    def _seal(self, token: str) -> str:
        return json.dumps(self._cipher.hide({"t": token}, frozenset({"t"})))

    def _unseal(self, session: PageSession) -> str:
        if session.method == "static":
            return session.proof
        try:
            return str(self._cipher.show(json.loads(session.proof))["t"])
        except (ValueError, KeyError, TypeError):
            return ""  # NOTE: sealed under a secret this host no longer has: no proof, no session

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


def _token_expiry(identity: Identity) -> float:
    """When the token ``identity`` signed in with expires (a JWT's ``exp``; never for others)."""
    exp: Any = identity.claims.get("exp")
    return float(exp) if isinstance(exp, int | float) and identity.method == "jwt" else math.inf
