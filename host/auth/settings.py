"""Auth settings, read from ``HOST_AUTH_*`` variables and checked before anything uses them.

=====================  ==========================================================================
Variable               Meaning (default)
=====================  ==========================================================================
HOST_AUTH_ISSUER       The authorization server whose JWTs are accepted (its ``iss``), an https
                       URL. Setting it turns JWT authentication on.
HOST_AUTH_AUDIENCE     This host's resource identifier: accepted tokens must name it in ``aud``.
                       Required with an issuer; also the ``resource`` of the protected resource
                       metadata. Usually the public URL of the MCP endpoint.
HOST_AUTH_JWKS_URI     Where the issuer's signing keys are (default: the ``jwks_uri`` of its
                       RFC 8414 or OpenID Connect metadata).
HOST_AUTH_TOKENS       A static tokens file made by ``host token create``. Setting it turns
                       static-token authentication on, with or without an issuer.
HOST_AUTH_ALGORITHMS   JWT signature algorithms accepted, comma-separated (every RSA, RSA-PSS,
                       ECDSA and EdDSA one). Never ``none``, never a shared-secret HS* one.
HOST_AUTH_LEEWAY       Seconds of clock difference allowed on ``exp`` and ``nbf`` (30, at most 300).
HOST_AUTH_JWKS_TIMEOUT Seconds allowed for one whole fetch of the issuer's metadata and keys,
                       however slowly it sends them (5, at most 60).
HOST_AUTH_JWKS_WAIT    The most seconds a request waits for keys being fetched: before the first
                       arrive, or for an unknown key id (2, at most the timeout). Tokens signed
                       with known keys, and static tokens, never wait.
=====================  ==========================================================================

``http://`` URLs are refused except on loopback addresses.
"""

from __future__ import annotations

import math
import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from host.auth.browser_settings import NO_BROWSER, BrowserSettings
from host.auth.errors import AuthSettingsError
from host.auth.urls import check_url

__all__ = ["ASYMMETRIC_ALGORITHMS", "AuthSettings"]

#: The JWS algorithms verified with a public key, which the host can accept.
ASYMMETRIC_ALGORITHMS = (
    "RS256", "RS384", "RS512", "PS256", "PS384", "PS512", "ES256", "ES384", "ES512", "EdDSA",
)  # fmt: skip

DEFAULT_LEEWAY_S = 30.0
MAX_LEEWAY_S = 300.0
DEFAULT_JWKS_TIMEOUT_S = 5.0
MAX_JWKS_TIMEOUT_S = 60.0
DEFAULT_JWKS_WAIT_S = 2.0

# Variables that only mean something for JWTs, so only with an issuer.
_JWT_ONLY = (
    "HOST_AUTH_AUDIENCE", "HOST_AUTH_JWKS_URI", "HOST_AUTH_ALGORITHMS", "HOST_AUTH_LEEWAY",
    "HOST_AUTH_JWKS_TIMEOUT", "HOST_AUTH_JWKS_WAIT",
)  # fmt: skip


@dataclass(frozen=True)
class AuthSettings:
    """How callers authenticate to one deployment. Nothing set: no authentication at all.

    Attributes:
        issuer: The accepted tokens' issuer (``iss``); None turns JWT authentication off.
        audience: This host's resource identifier, required in accepted tokens' ``aud``.
        jwks_uri: The issuer's key set; None means discovered from the issuer's metadata.
        tokens_file: The static tokens file; None turns static tokens off.
        algorithms: Accepted JWT signature algorithms.
        leeway_s: Allowed clock difference on ``exp`` and ``nbf``, in seconds.
        jwks_timeout_s: Seconds allowed for one whole fetch of the issuer's metadata and keys.
        jwks_wait_s: The most seconds a request waits for keys being fetched.
        browser: The pages' sign-in (:mod:`host.auth.browser_settings`).
    """

    issuer: str | None = None
    audience: str | None = None
    jwks_uri: str | None = None
    tokens_file: Path | None = None
    algorithms: tuple[str, ...] = ASYMMETRIC_ALGORITHMS
    leeway_s: float = DEFAULT_LEEWAY_S
    jwks_timeout_s: float = DEFAULT_JWKS_TIMEOUT_S
    jwks_wait_s: float = DEFAULT_JWKS_WAIT_S
    browser: BrowserSettings = NO_BROWSER

    def __post_init__(self) -> None:
        _check(self)
        # NOTE: spelled as the JOSE names, so the allow-list compares exactly with token headers.
        object.__setattr__(self, "algorithms", _algorithms(",".join(self.algorithms)))

    @property
    def enabled(self) -> bool:
        """Whether callers must authenticate (an issuer or a static tokens file is set)."""
        return self.issuer is not None or self.tokens_file is not None

    @property
    def jwt(self) -> bool:
        """Whether JWTs are accepted (an issuer is set)."""
        return self.issuer is not None

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None) -> AuthSettings:
        """Settings from ``HOST_AUTH_*`` variables (``os.environ`` unless ``env`` is given).

        Raises:
            AuthSettingsError: A variable is unusable, or one is missing that another needs; the
                message names them.
        """
        env = os.environ if env is None else env

        def text(name: str) -> str | None:
            value = env.get(name, "").strip()
            return value or None

        issuer = text("HOST_AUTH_ISSUER")
        if issuer is None:
            for name in _JWT_ONLY:
                if text(name) is not None:
                    raise AuthSettingsError(
                        f"{name} is set but HOST_AUTH_ISSUER is not: it only applies to JWTs, "
                        f"so set HOST_AUTH_ISSUER too, or unset {name}"
                    )
        tokens = text("HOST_AUTH_TOKENS")
        algorithms = text("HOST_AUTH_ALGORITHMS")
        return cls(
            issuer=issuer,
            audience=text("HOST_AUTH_AUDIENCE"),
            jwks_uri=text("HOST_AUTH_JWKS_URI"),
            tokens_file=Path(tokens) if tokens else None,
            algorithms=_algorithms(algorithms) if algorithms else ASYMMETRIC_ALGORITHMS,
            leeway_s=_leeway(text("HOST_AUTH_LEEWAY")),
            jwks_timeout_s=_seconds(
                "HOST_AUTH_JWKS_TIMEOUT", text("HOST_AUTH_JWKS_TIMEOUT"), DEFAULT_JWKS_TIMEOUT_S
            ),
            jwks_wait_s=_seconds(
                "HOST_AUTH_JWKS_WAIT", text("HOST_AUTH_JWKS_WAIT"), DEFAULT_JWKS_WAIT_S
            ),
            browser=BrowserSettings.from_env(env),
        )


def _check(settings: AuthSettings) -> None:
    """Raise AuthSettingsError for the first unusable field, named by its variable."""
    if settings.issuer is None:
        if settings.audience is not None or settings.jwks_uri is not None:
            raise AuthSettingsError(
                "HOST_AUTH_AUDIENCE and HOST_AUTH_JWKS_URI need HOST_AUTH_ISSUER: set it too"
            )
    else:
        problem = check_url(settings.issuer, "HOST_AUTH_ISSUER", query=False)
        if problem:
            raise AuthSettingsError(problem)
        if settings.audience is None:
            raise AuthSettingsError(
                "HOST_AUTH_ISSUER is set but HOST_AUTH_AUDIENCE is not: set it to this host's "
                "resource identifier (usually the public URL of its MCP endpoint, e.g. "
                "https://tools.example.com/mcp) so that tokens issued for other services are "
                "refused"
            )
        problem = check_url(settings.audience, "HOST_AUTH_AUDIENCE")
        if problem:
            raise AuthSettingsError(problem)
        if settings.jwks_uri is not None:
            problem = check_url(settings.jwks_uri, "HOST_AUTH_JWKS_URI")
            if problem:
                raise AuthSettingsError(problem)
    if settings.tokens_file is not None and not str(settings.tokens_file).strip():
        raise AuthSettingsError("HOST_AUTH_TOKENS must be a file path")
    if not (0 < settings.jwks_timeout_s <= MAX_JWKS_TIMEOUT_S):
        raise AuthSettingsError(
            f"HOST_AUTH_JWKS_TIMEOUT must be more than 0 and at most {MAX_JWKS_TIMEOUT_S:g} "
            f"seconds, got {settings.jwks_timeout_s:g}"
        )
    if not (0 <= settings.jwks_wait_s <= settings.jwks_timeout_s):
        raise AuthSettingsError(
            "HOST_AUTH_JWKS_WAIT must be between 0 and HOST_AUTH_JWKS_TIMEOUT "
            f"({settings.jwks_timeout_s:g}) seconds, got {settings.jwks_wait_s:g}"
        )
    if not (0 <= settings.leeway_s <= MAX_LEEWAY_S):
        raise AuthSettingsError(
            f"HOST_AUTH_LEEWAY must be between 0 and {MAX_LEEWAY_S:g} seconds, "
            f"got {settings.leeway_s:g}"
        )


def _algorithms(text: str) -> tuple[str, ...]:
    names = [part.strip() for part in text.replace(" ", ",").split(",") if part.strip()]
    if not names:
        raise AuthSettingsError("HOST_AUTH_ALGORITHMS must name at least one algorithm")
    known = {name.upper(): name for name in ASYMMETRIC_ALGORITHMS}
    chosen: dict[str, None] = {}
    for name in names:
        if name.lower() == "none":
            raise AuthSettingsError(
                "HOST_AUTH_ALGORITHMS must not contain 'none': unsigned tokens are never accepted"
            )
        if name.upper().startswith("HS"):
            raise AuthSettingsError(
                f"HOST_AUTH_ALGORITHMS must not contain {name!r}: shared-secret algorithms are not "
                "accepted, since the host verifies tokens with the issuer's public keys"
            )
        if name.upper() not in known:
            raise AuthSettingsError(
                f"HOST_AUTH_ALGORITHMS: unknown algorithm {name!r}; use some of "
                f"{', '.join(ASYMMETRIC_ALGORITHMS)}"
            )
        chosen.setdefault(known[name.upper()], None)
    return tuple(chosen)


def _leeway(text: str | None) -> float:
    if text is None:
        return DEFAULT_LEEWAY_S
    try:
        value = float(text)
    except ValueError:
        raise AuthSettingsError(
            f"HOST_AUTH_LEEWAY must be a number of seconds, got {text!r}"
        ) from None
    if not math.isfinite(value) or not (0 <= value <= MAX_LEEWAY_S):
        raise AuthSettingsError(
            f"HOST_AUTH_LEEWAY must be between 0 and {MAX_LEEWAY_S:g} seconds, got {text!r}"
        )
    return value


def _seconds(name: str, text: str | None, default: float) -> float:
    """A number of seconds from ``name``'s value (its range is checked with the rest)."""
    if text is None:
        return default
    try:
        value = float(text)
    except ValueError:
        raise AuthSettingsError(f"{name} must be a number of seconds, got {text!r}") from None
    if not math.isfinite(value):
        raise AuthSettingsError(f"{name} must be a number of seconds, got {text!r}")
    return value
