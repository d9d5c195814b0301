"""Fetch a small JSON document from an authorization server: HTTPS, bounded, no redirects."""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from typing import Any

from host.auth.urls import check_url
from host.errors import FetchError

__all__ = ["MAX_DOCUMENT_BYTES", "FetchError", "fetch_json"]

#: Metadata documents and key sets are a few kilobytes; anything far larger is not one.
MAX_DOCUMENT_BYTES = 512 * 1024


class _NoRedirects(urllib.request.HTTPRedirectHandler):
    # NOTE: a redirect could lead from https to plain http, or anywhere else; the URLs an operator
    # configures (or an issuer publishes) must be the ones used.
    def redirect_request(
        self, req: Any, fp: Any, code: int, msg: str, headers: Any, newurl: str
    ) -> None:
        raise FetchError(
            f"{req.full_url} redirected ({code}) to {newurl}; redirects are not followed"
        )


_OPENER = urllib.request.build_opener(_NoRedirects())


def fetch_json(url: str, timeout: float) -> dict[str, Any]:
    """The JSON object at ``url``.

    Args:
        url: An https URL (http on loopback only).
        timeout: Seconds allowed for connecting and for each read.

    Raises:
        FetchError: The URL is not allowed, the server did not answer 200 in time, or the body is
            not a JSON object of reasonable size.
    """
    problem = check_url(url, "the URL")
    if problem:
        raise FetchError(problem)
    request = urllib.request.Request(
        url, headers={"Accept": "application/json", "User-Agent": "host-auth"}
    )
    try:
        with _OPENER.open(request, timeout=timeout) as response:
            body = response.read(MAX_DOCUMENT_BYTES + 1)
    except FetchError:
        raise
    except urllib.error.HTTPError as exc:
        raise FetchError(f"GET {url} answered HTTP {exc.code}") from None
    except (urllib.error.URLError, OSError, ValueError) as exc:
        reason = exc.reason if isinstance(exc, urllib.error.URLError) else exc
        raise FetchError(f"GET {url} failed: {reason}") from None
    if len(body) > MAX_DOCUMENT_BYTES:
        raise FetchError(f"GET {url} returned more than {MAX_DOCUMENT_BYTES} bytes")
    try:
        document = json.loads(body)
    except ValueError:
        raise FetchError(f"GET {url} did not return JSON") from None
    if not isinstance(document, dict):
        raise FetchError(f"GET {url} did not return a JSON object")
    return document
