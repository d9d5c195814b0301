"""Verify a JWT access token and say whose it is (MCP authorization, "Token Handling").

Checked, in order: the header's algorithm against the allow-list (so ``none`` and shared-secret
algorithms never reach a key), the signature against the issuer's published key for that ``kid``
and algorithm, then ``iss`` (exactly the configured issuer), ``aud`` (must contain this host's
audience), ``exp`` and ``nbf`` (with the leeway), and ``sub`` (the principal: printable, at most
:data:`MAX_SUB_LENGTH` characters). Every failure is one
``invalid_token`` :class:`~host.auth.errors.AuthError`; its reason says which check failed.
"""

from __future__ import annotations

from types import MappingProxyType
from typing import Any

import jwt
from jwt.algorithms import has_crypto

from host.auth.errors import AuthError
from host.auth.identity import Identity
from host.auth.jwks import KeyCache
from host.auth.scopes import scopes_from_claims
from host.auth.settings import AuthSettings

__all__ = ["MAX_SUB_LENGTH", "MAX_TOKEN_LENGTH", "JwtVerifier"]

if not has_crypto:  # PyJWT alone verifies shared-secret tokens only, which are never accepted
    raise ImportError("PyJWT's cryptography backend is not installed")

#: Longer than any access token an identity provider issues; longer ones are not parsed at all.
MAX_TOKEN_LENGTH = 16 * 1024

#: Longer than any subject identifier an issuer assigns (OpenID Connect: at most 255 ASCII).
MAX_SUB_LENGTH = 1024

_REQUIRED = ["exp", "iss", "aud", "sub"]


class JwtVerifier:
    """Checks JWTs issued by the configured issuer for this host.

    Args:
        settings: The auth settings; their ``issuer`` and ``audience`` must be set.
        keys: The issuer's keys.
    """

    def __init__(self, settings: AuthSettings, keys: KeyCache) -> None:
        if settings.issuer is None or settings.audience is None:
            raise ValueError("JwtVerifier needs settings with an issuer and an audience")
        self._issuer = settings.issuer
        self._audience = settings.audience
        self._algorithms = frozenset(settings.algorithms)
        self._leeway = settings.leeway_s
        self._keys = keys

    def verify(self, token: str) -> Identity:
        """The identity ``token`` proves.

        Raises:
            AuthError: ``invalid_token``, with the failed check as its reason.
        """
        if len(token) > MAX_TOKEN_LENGTH:
            raise AuthError("invalid_token", f"token longer than {MAX_TOKEN_LENGTH} characters")
        try:
            header = jwt.get_unverified_header(token)
        except jwt.InvalidTokenError as exc:
            raise AuthError("invalid_token", f"not a JWT: {exc}") from None
        alg = header.get("alg")
        if not isinstance(alg, str) or alg not in self._algorithms:
            raise AuthError("invalid_token", f"algorithm {alg!r} is not allowed")
        if "crit" in header:
            # RFC 7515 section 4.1.11: extensions we do not understand must not be ignored.
            raise AuthError("invalid_token", f"unsupported critical header {header['crit']!r}")
        kid = header.get("kid")
        if kid is not None and not isinstance(kid, str):
            raise AuthError("invalid_token", "the kid header is not a string")
        key = self._keys.key(kid, alg)
        claims = self._decode(token, key, alg)
        sub = claims.get("sub")
        if not isinstance(sub, str) or not sub:
            raise AuthError("invalid_token", "the sub claim is empty or not a string")
        if not sub.isprintable() or len(sub) > MAX_SUB_LENGTH:
            # NOTE: the principal is printed (host audit), stored and compared: no control or
            # bidi characters, no lone surrogates, nothing that could pass for two names.
            raise AuthError(
                "invalid_token", "the sub claim holds unprintable characters or is too long"
            )
        return Identity(
            principal=sub,
            scopes=scopes_from_claims(claims),
            claims=MappingProxyType(claims),
            method="jwt",
        )

    def warm_up(self) -> str | None:
        """Fetch the issuer's keys now; a problem for the log, or None."""
        return self._keys.warm_up()

    def _decode(self, token: str, key: jwt.PyJWK, alg: str) -> dict[str, Any]:
        try:
            return jwt.decode(
                token,
                key,
                algorithms=[alg],
                audience=self._audience,
                issuer=self._issuer,
                leeway=self._leeway,
                options={"require": _REQUIRED},
            )
        except jwt.ExpiredSignatureError:
            reason = "expired"
        except jwt.ImmatureSignatureError:
            reason = "not valid yet (nbf or iat in the future)"
        except jwt.InvalidAudienceError:
            reason = f"aud does not contain {self._audience!r}"
        except jwt.InvalidIssuerError:
            reason = f"iss is not {self._issuer!r}"
        except jwt.InvalidSignatureError:
            reason = "bad signature"
        except jwt.MissingRequiredClaimError as exc:
            reason = f"no {exc.claim} claim"
        except jwt.InvalidTokenError as exc:
            reason = f"{type(exc).__name__}: {exc}"
        raise AuthError("invalid_token", reason)
