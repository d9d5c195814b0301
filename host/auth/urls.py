"""The one rule for the URLs auth talks to, and the well-known addresses built from them.

Keys and metadata decide whose tokens the host believes, so they are fetched over HTTPS only;
plain ``http://`` is allowed on loopback addresses, where there is no network to tamper with
(development, tests).
"""

from __future__ import annotations

import ipaddress
from urllib.parse import urlsplit

__all__ = ["authorization_server_metadata_urls", "check_url", "is_loopback"]


def is_loopback(hostname: str) -> bool:
    """Whether ``hostname`` is ``localhost`` or a loopback IP address (127.0.0.0/8, ::1)."""
    if hostname.lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(hostname.strip("[]")).is_loopback
    except ValueError:
        return False


def check_url(url: str, what: str, *, query: bool = True) -> str | None:
    """Why ``url`` may not be used for ``what``, or None when it may.

    Args:
        url: The URL.
        what: How to name it in the message, e.g. ``HOST_AUTH_ISSUER``.
        query: Whether a query string is allowed (an issuer may not have one, RFC 8414).
    """
    if not url.isprintable() or any(c in url for c in ' "\\<>`{}|^'):
        return f"{what} is not a valid URL ({url!r}: it holds spaces or characters URLs never do)"
    try:
        parts = urlsplit(url)
        hostname = parts.hostname
        parts.port  # noqa: B018 - raises ValueError for a port that is not a number
    except ValueError as exc:
        return f"{what} is not a valid URL ({url!r}: {exc})"
    scheme = parts.scheme.lower()
    if scheme not in ("https", "http") or not hostname:
        return f"{what} must be an absolute https:// URL, got {url!r}"
    if scheme == "http" and not is_loopback(hostname):
        return (
            f"{what} must use https:// ({url!r}): plain http is allowed on loopback addresses "
            "only (localhost, 127.0.0.1, ::1)"
        )
    if parts.username is not None or parts.password is not None:
        return f"{what} must not carry a user name or password, got {url!r}"
    if parts.fragment or url.endswith("#"):
        return f"{what} must not have a #fragment, got {url!r}"
    if not query and (parts.query or "?" in url):
        return f"{what} must not have a ?query, got {url!r}"
    return None


def authorization_server_metadata_urls(issuer: str) -> list[str]:
    """Where an issuer's metadata may be, in the order MCP clients try them.

    RFC 8414 ``/.well-known/oauth-authorization-server`` and OpenID Connect Discovery
    ``/.well-known/openid-configuration``, with the issuer's path inserted after the well-known
    prefix, and for OpenID Connect also appended (MCP authorization, "Authorization Server Metadata
    Discovery").
    """
    parts = urlsplit(issuer)
    origin = f"{parts.scheme}://{parts.netloc}"
    path = parts.path.rstrip("/")
    if not path:
        return [
            f"{origin}/.well-known/oauth-authorization-server",
            f"{origin}/.well-known/openid-configuration",
        ]
    return [
        f"{origin}/.well-known/oauth-authorization-server{path}",
        f"{origin}/.well-known/openid-configuration{path}",
        f"{origin}{path}/.well-known/openid-configuration",
    ]
