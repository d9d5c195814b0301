"""The browser sign-in with the issuer: OpenID Connect's authorization code flow with PKCE (S256).

Authlib does the protocol's client side (the authorization URL with ``state``, ``nonce`` and the
code challenge; the code's exchange); the ID token's signature, issuer, audience and nonce are
checked with PyJWT against the issuer's published keys. The person's principal and scopes are then
read from the access token by the host's :class:`~host.auth.Authenticator`, exactly as for an MCP
call, so a principal is the same person on both paths.
"""

from __future__ import annotations

import hmac
import threading
from dataclasses import dataclass
from typing import Any

import jwt
from authlib.common.security import generate_token
from authlib.integrations.httpx_client import OAuth2Client

from host.auth.authenticator import Authenticator
from host.auth.browser_settings import BrowserSettings
from host.auth.errors import AuthError
from host.auth.fetch import FetchError, fetch_json
from host.auth.identity import Identity

__all__ = ["OidcSignIn", "SignInStart"]


@dataclass(frozen=True)
class SignInStart:
    """Where to send the person, and what to keep (in a signed cookie) until they come back."""

    url: str
    state: str
    nonce: str
    verifier: str


class OidcSignIn:
    """Signs people in at the authenticator's issuer as ``settings``' client.

    Args:
        authenticator: Reads the principal and scopes from the access token.
        settings: The client id and secret.
        timeout: Seconds allowed per request to the issuer.
    """

    def __init__(
        self, authenticator: Authenticator, settings: BrowserSettings, timeout: float = 10.0
    ) -> None:
        issuer = authenticator.settings.issuer
        if issuer is None or settings.client_id is None:
            raise ValueError("OidcSignIn needs an issuer and a client id")
        self._authenticator = authenticator
        self._issuer = issuer
        self._audience = authenticator.settings.audience
        self._algorithms = list(authenticator.settings.algorithms)
        self._settings = settings
        self._timeout = timeout
        self._metadata: dict[str, Any] | None = None
        self._lock = threading.Lock()

    def start(self, redirect_uri: str) -> SignInStart:
        """A new sign-in: the issuer's authorization URL, and its state, nonce and verifier."""
        verifier, nonce = generate_token(64), generate_token(32)
        with self._client(redirect_uri) as client:
            url, state = client.create_authorization_url(
                self._metadata_value("authorization_endpoint"),
                code_verifier=verifier,
                nonce=nonce,
                resource=self._audience,
            )
        return SignInStart(str(url), str(state), nonce, verifier)

    def finish(self, redirect_uri: str, code: str, verifier: str, nonce: str) -> Identity:
        """The person the issuer's ``code`` is for.

        Raises:
            AuthError: ``invalid_token`` when the exchange or any check fails (the reason says).
        """
        try:
            with self._client(redirect_uri) as client:
                token = client.fetch_token(
                    self._metadata_value("token_endpoint"),
                    code=code,
                    code_verifier=verifier,
                    resource=self._audience,
                )
        except AuthError:
            raise
        except Exception as exc:  # NOTE: Authlib and httpx raise many kinds; all mean "no".
            raise AuthError("invalid_token", f"the code exchange failed: {exc}") from None
        self._check_id_token(token.get("id_token"), nonce)
        access = token.get("access_token")
        if not isinstance(access, str):
            raise AuthError("invalid_token", "the issuer returned no access token")
        return self._authenticator.authenticate(f"Bearer {access}")

    def _client(self, redirect_uri: str) -> OAuth2Client:
        return OAuth2Client(
            client_id=self._settings.client_id,
            client_secret=self._settings.client_secret,
            scope="openid",
            redirect_uri=redirect_uri,
            code_challenge_method="S256",
            timeout=self._timeout,
        )

    def _check_id_token(self, id_token: object, nonce: str) -> None:
        if not isinstance(id_token, str):
            raise AuthError("invalid_token", "the issuer returned no ID token")
        try:
            keys = jwt.PyJWKClient(self._metadata_value("jwks_uri"), timeout=int(self._timeout))
            key = keys.get_signing_key_from_jwt(id_token)
            claims = jwt.decode(
                id_token,
                key,
                algorithms=self._algorithms,
                audience=self._settings.client_id,
                issuer=self._issuer,
                options={"require": ["exp", "iss", "aud", "sub"]},
            )
        except jwt.PyJWTError as exc:
            raise AuthError("invalid_token", f"the ID token: {exc}") from None
        if not hmac.compare_digest(str(claims.get("nonce", "")), nonce):
            raise AuthError("invalid_token", "the ID token's nonce is not this sign-in's")

    def _metadata_value(self, name: str) -> str:
        """An endpoint from the issuer's OpenID Connect metadata, fetched once."""
        with self._lock:
            if self._metadata is None:
                url = self._issuer.rstrip("/") + "/.well-known/openid-configuration"
                try:
                    metadata = fetch_json(url, self._timeout)
                except FetchError as exc:
                    raise AuthError("invalid_token", f"the issuer's metadata: {exc}") from None
                if metadata.get("issuer") != self._issuer:
                    raise AuthError("invalid_token", "the issuer's metadata names another issuer")
                self._metadata = metadata
            value = self._metadata.get(name)
        if not isinstance(value, str):
            raise AuthError("invalid_token", f"the issuer's metadata has no {name}")
        return value
