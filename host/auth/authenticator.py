"""From an ``Authorization`` header to an :class:`~host.auth.identity.Identity`.

The one entry point the transport calls per request. Tokens are read from the header only
(RFC 6750 section 2.1; MCP forbids them in the query string). A token starting with
:data:`~host.auth.tokenfile.TOKEN_PREFIX` is a static token; anything else is a JWT.

One name, one person: a static token's principal is its name, a JWT's is its ``sub``; what either
keeps (``requestState``, sessions, remembered approvals, approval requests, URL asks) is owned by
:attr:`~host.auth.identity.Identity.owner`, qualified by source, so neither can ever open the
other's. A JWT whose ``sub`` reads as the name of a current static token (the same after NFKC case
folding, or by its UTS #39 skeleton: :mod:`host.auth.names`) is refused besides, so that one
display name does not read as two people in the logs.
"""

from __future__ import annotations

import re
from dataclasses import replace
from typing import TYPE_CHECKING

from host.auth.errors import AuthError, AuthSettingsError
from host.auth.identity import ANONYMOUS, Identity
from host.auth.settings import AuthSettings
from host.auth.static import StaticTokens
from host.auth.tokenfile import TOKEN_PREFIX
from host.extras import install_line

if TYPE_CHECKING:
    from host.auth.bearer import JwtVerifier

__all__ = ["INSTALL_HINT", "Authenticator", "bearer_token"]

#: What to install for JWT support, named in the start-up error when it is missing.
INSTALL_HINT = install_line("auth")

# RFC 6750 section 2.1: credentials = "Bearer" 1*SP b64token.
_BEARER = re.compile(r"Bearer +([A-Za-z0-9\-._~+/]+=*)", re.IGNORECASE)


def bearer_token(authorization: str | None) -> str:
    """The token in an ``Authorization`` header value.

    Raises:
        AuthError: ``missing`` when there is no header or it uses another scheme (RFC 6750
            section 3.1: no error code then); ``invalid_token`` for a malformed bearer value.
    """
    value = (authorization or "").strip()
    if not value:
        raise AuthError("missing", "no Authorization header")
    scheme = value.split(None, 1)[0]
    if scheme.lower() != "bearer":
        raise AuthError("missing", f"Authorization scheme {scheme[:20]!r} is not Bearer")
    match = _BEARER.fullmatch(value)
    if match is None:
        raise AuthError("invalid_token", "malformed Bearer credentials")
    return match.group(1)


class Authenticator:
    """Authenticates requests as one deployment's settings say.

    Built once per process, at start-up (it raises there, not on the first request, when the
    settings cannot work). Thread-safe.

    Args:
        settings: The auth settings.
        fetch_timeout: Seconds allowed for one whole fetch of issuer metadata and keys (default:
            the settings' ``jwks_timeout_s``); a request waits at most ``jwks_wait_s`` of it.
        jwks_refetch_interval: Least seconds between key fetches caused by an unknown ``kid``.
        jwks_retry_interval: Seconds to wait after a failed key fetch before trying again.
        jwks_max_age: Seconds after which the keys are fetched again.
        tokens_check_interval: Least seconds between two looks at the static tokens file.

    Raises:
        AuthSettingsError: JWTs are configured but PyJWT is not installed (the message says what
            to install), or the static tokens file is unusable.
    """

    def __init__(
        self,
        settings: AuthSettings,
        *,
        fetch_timeout: float | None = None,
        jwks_refetch_interval: float = 30.0,
        jwks_retry_interval: float = 5.0,
        jwks_max_age: float = 3600.0,
        tokens_check_interval: float = 1.0,
    ) -> None:
        self.settings = settings
        self._jwt: JwtVerifier | None = None
        self._static: StaticTokens | None = None
        if settings.issuer is not None:
            try:
                from host.auth.bearer import JwtVerifier
                from host.auth.jwks import KeyCache
            except ImportError as exc:
                raise AuthSettingsError(
                    f"HOST_AUTH_ISSUER is set, so the host verifies JWTs, which needs PyJWT with "
                    f"its cryptography backend ({exc}); install it: {INSTALL_HINT}"
                ) from None
            keys = KeyCache(
                settings.issuer,
                settings.jwks_uri,
                timeout=settings.jwks_timeout_s if fetch_timeout is None else fetch_timeout,
                wait=min(settings.jwks_wait_s, fetch_timeout or settings.jwks_timeout_s),
                refetch_interval=jwks_refetch_interval,
                retry_interval=jwks_retry_interval,
                max_age=jwks_max_age,
            )
            self._jwt = JwtVerifier(settings, keys)
        if settings.tokens_file is not None:
            self._static = StaticTokens(settings.tokens_file, check_interval=tokens_check_interval)

    @property
    def enabled(self) -> bool:
        """Whether requests must carry a token (False: everyone is ``anonymous``)."""
        return self.settings.enabled

    def authenticate(self, authorization: str | None) -> Identity:
        """The identity an ``Authorization`` header value proves.

        Args:
            authorization: The header's value, or None when the request has none.

        Returns:
            :data:`~host.auth.identity.ANONYMOUS` when auth is not enabled (whatever was sent).

        Raises:
            AuthError: ``missing`` or ``invalid_token``; its ``reason`` is for the log only.
        """
        if not self.settings.enabled:
            return ANONYMOUS
        token = bearer_token(authorization)
        if token.startswith(TOKEN_PREFIX):
            if self._static is None:
                raise AuthError("invalid_token", "a static token, but HOST_AUTH_TOKENS is not set")
            return self._static.identify(token)
        if self._jwt is None:
            raise AuthError("invalid_token", "not a static token, and HOST_AUTH_ISSUER is not set")
        identity = self._jwt.verify(token)
        taken = None if self._static is None else self._static.holds(identity.principal)
        if taken is not None:
            # NOTE: ownership is by Identity.owner and never meets a static name; this refusal only
            # keeps one display name (or one that reads the same) from standing for two people.
            raise AuthError(
                "invalid_token",
                f"the sub claim {identity.principal!r} is or reads as {taken!r}, the name of a "
                "static token; a JWT may not act as a static token's holder (rename the static "
                "token)",
            )
        return replace(identity, proof=token)

    def again(self, who: Identity) -> Identity:
        """``who`` established again now, from its proof, exactly as a new request would be.

        A static token's holder is looked up by the token's digest (a revoked token, or its
        scopes as the tokens file says now); a JWT is verified again (expired, or its ``sub``
        now a static token's name). ``anonymous`` stays itself where auth is off.

        Raises:
            AuthError: ``invalid_token`` when the proof no longer holds.
        """
        if not self.settings.enabled:
            return ANONYMOUS
        if who.method == "static" and self._static is not None:
            return self._static.identify_digest(who.proof)
        if who.method == "jwt" and who.proof:
            return self.authenticate(f"Bearer {who.proof}")
        raise AuthError("invalid_token", f"nothing proves {who.principal!r} again")

    def warm_up(self) -> str | None:
        """Fetch the issuer's keys now, to find problems at start-up rather than per request.

        Returns:
            A problem for the log (the host still starts: the issuer may come back), or None.
        """
        return None if self._jwt is None else self._jwt.warm_up()
