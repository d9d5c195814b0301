"""The browser sign-in's settings: the OpenID Connect client, and the host's public URL.

=======================  ==========================================================================
Variable                 Meaning (default)
=======================  ==========================================================================
HOST_AUTH_CLIENT_ID      This host's client id at HOST_AUTH_ISSUER: with the secret, people sign in
                         to the host's pages with the issuer (OpenID Connect code flow with PKCE).
HOST_AUTH_CLIENT_SECRET  That client's secret (needed with the id).
HOST_PUBLIC_URL          The base URL people reach the host at: of every link, and of the sign-in's
                         redirect URI (``BASE/approvals/sign-in/callback``). Default: the scheme and
                         host of each request.
=======================  ==========================================================================
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from urllib.parse import urlsplit

from host.auth.errors import AuthSettingsError
from host.auth.urls import check_url, is_loopback

__all__ = ["NO_BROWSER", "BrowserSettings"]


@dataclass(frozen=True)
class BrowserSettings:
    """How people sign in to the host's pages.

    Attributes:
        client_id: The OpenID Connect client id; None: no sign-in with the issuer.
        client_secret: Its secret.
        public_url: The host's base URL, without a trailing slash; None: each request's own.
    """

    client_id: str | None = None
    client_secret: str | None = None
    public_url: str | None = None

    @property
    def oidc(self) -> bool:
        """Whether people sign in with the issuer."""
        return self.client_id is not None

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None) -> BrowserSettings:
        """Settings from ``HOST_AUTH_CLIENT_*`` and ``HOST_PUBLIC_URL``.

        Raises:
            AuthSettingsError: One is unusable, or one is set without what it needs.
        """
        env = os.environ if env is None else env

        def text(name: str) -> str | None:
            return env.get(name, "").strip() or None

        client_id, secret = text("HOST_AUTH_CLIENT_ID"), text("HOST_AUTH_CLIENT_SECRET")
        if (client_id is None) != (secret is None):
            raise AuthSettingsError(
                "HOST_AUTH_CLIENT_ID and HOST_AUTH_CLIENT_SECRET go together: set both (the "
                "browser sign-in's client at HOST_AUTH_ISSUER), or neither"
            )
        if client_id is not None and text("HOST_AUTH_ISSUER") is None:
            raise AuthSettingsError(
                "HOST_AUTH_CLIENT_ID is set but HOST_AUTH_ISSUER is not: the client signs people "
                "in at that issuer, so set it too"
            )
        public = text("HOST_PUBLIC_URL")
        if public is not None:
            problem = check_url(public, "HOST_PUBLIC_URL", query=False)
            if problem:
                raise AuthSettingsError(problem)
            public = public.rstrip("/")
        return cls(client_id, secret, public)

    def secure_cookies(self, request_base: str) -> bool:
        """Whether cookies need ``Secure``: always, but for plain http on loopback."""
        parts = urlsplit(self.public_url or request_base)
        return not (parts.scheme == "http" and is_loopback(parts.hostname or ""))


#: No browser sign-in client, and links relative to each request.
NO_BROWSER = BrowserSettings()
