"""What the HTTP side says about auth: ``WWW-Authenticate`` challenges and resource metadata.

Built from the settings alone (never from the request's ``Host`` header, which the caller
controls). The protected resource metadata (RFC 9728) lives at the well-known address derived
from the audience, and every challenge points at it with ``resource_metadata`` (MCP authorization,
"Protected Resource Metadata Discovery Requirements"). The challenges never say which check
failed beyond ``invalid_token`` (RFC 6750 section 3.1).

Examples, for ``HOST_AUTH_AUDIENCE=https://tools.example.com/mcp`` (``M`` standing for
``https://tools.example.com/.well-known/oauth-protected-resource/mcp``)::

    401, no token:   Bearer resource_metadata="M"
    401, bad token:  Bearer error="invalid_token", resource_metadata="M"
    403:             Bearer error="insufficient_scope", scope="tickets:read tickets:write",
                     resource_metadata="M"
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any
from urllib.parse import urlsplit

from host.auth.errors import AuthErrorKind
from host.auth.settings import AuthSettings

__all__ = [
    "WELL_KNOWN",
    "insufficient_scope_challenge",
    "protected_resource_metadata",
    "protected_resource_paths",
    "resource_metadata_url",
    "unauthorized_challenge",
]

WELL_KNOWN = "/.well-known/oauth-protected-resource"


def _unique(scopes: Iterable[str]) -> list[str]:
    return list(dict.fromkeys(s for s in scopes if s))


def protected_resource_paths(settings: AuthSettings) -> tuple[str, ...]:
    """The paths to serve the metadata at: path-suffixed for the audience's path, then the root.

    Empty without an issuer (static tokens alone have no authorization server to advertise).
    """
    if settings.audience is None or settings.issuer is None:
        return ()
    path = urlsplit(settings.audience).path.rstrip("/")
    return (WELL_KNOWN + path, WELL_KNOWN) if path else (WELL_KNOWN,)


def resource_metadata_url(settings: AuthSettings) -> str | None:
    """The metadata's URL (first of :func:`protected_resource_paths`), or None without an issuer."""
    paths = protected_resource_paths(settings)
    if not paths or settings.audience is None:
        return None
    parts = urlsplit(settings.audience)
    return f"{parts.scheme}://{parts.netloc}{paths[0]}"


def protected_resource_metadata(settings: AuthSettings, scopes: Iterable[str]) -> dict[str, Any]:
    """The RFC 9728 metadata document for this host, as a JSON-ready dict.

    Args:
        settings: Auth settings with an issuer.
        scopes: The scopes the specs use, listed as ``scopes_supported`` (left out when none, so
            clients then ask for no particular scope, as MCP's "Scope Selection Strategy" says).

    Raises:
        ValueError: The settings have no issuer (no metadata is served then).
    """
    if settings.issuer is None or settings.audience is None:
        raise ValueError("protected resource metadata needs HOST_AUTH_ISSUER")
    document: dict[str, Any] = {
        "resource": settings.audience,
        "authorization_servers": [settings.issuer],
    }
    supported = sorted(_unique(scopes))
    if supported:
        document["scopes_supported"] = supported
    document["bearer_methods_supported"] = ["header"]
    return document


def _challenge(settings: AuthSettings, params: list[tuple[str, str]]) -> str:
    url = resource_metadata_url(settings)
    if url is not None:
        params.append(("resource_metadata", url))
    # NOTE: no value needs escaping: scopes and URLs were checked to hold no '"' or '\'.
    return "Bearer" + (" " + ", ".join(f'{k}="{v}"' for k, v in params) if params else "")


def unauthorized_challenge(
    settings: AuthSettings, kind: AuthErrorKind, scopes: Iterable[str] = ()
) -> str:
    """The ``WWW-Authenticate`` value of a 401.

    Args:
        settings: The auth settings.
        kind: The :class:`~host.auth.errors.AuthError`'s kind: ``missing`` (no error code, as
            RFC 6750 section 3.1 asks) or ``invalid_token``.
        scopes: Scopes to suggest the client asks for (the ones every call needs), if any.
    """
    params: list[tuple[str, str]] = []
    if kind == "invalid_token":
        params.append(("error", "invalid_token"))
    wanted = _unique(scopes)
    if wanted:
        params.append(("scope", " ".join(wanted)))
    return _challenge(settings, params)


def insufficient_scope_challenge(settings: AuthSettings, needed: Iterable[str]) -> str:
    """The ``WWW-Authenticate`` value of a 403: every scope the call needs, in one challenge.

    Args:
        settings: The auth settings.
        needed: All the scopes the call needs (the server's and the tool's), not only the
            missing ones, so that a client re-authorizing with them can make the call.
    """
    params = [("error", "insufficient_scope"), ("scope", " ".join(_unique(needed)))]
    return _challenge(settings, params)
