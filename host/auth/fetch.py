"""Fetch a small JSON document from an authorization server: HTTPS, bounded, no redirects.

Bounded in size (:data:`MAX_DOCUMENT_BYTES`) and in time: ``timeout`` is for the whole fetch,
connecting, headers and body together, however slowly the server sends them (a per-read timeout
lets a server that sends a byte a second hold a fetch for as long as it likes).
"""

from __future__ import annotations

import contextlib
import http.client
import json
import socket
import ssl
import threading
import time
import urllib.parse
from typing import Any

from host.auth.urls import check_url
from host.errors import FetchError

__all__ = ["MAX_DOCUMENT_BYTES", "FetchError", "fetch_json"]

#: Metadata documents and key sets are a few kilobytes; anything far larger is not one.
MAX_DOCUMENT_BYTES = 512 * 1024

_REDIRECTS = frozenset({301, 302, 303, 307, 308})
_HEADERS = {"Accept": "application/json", "User-Agent": "host-auth", "Connection": "close"}


def fetch_json(url: str, timeout: float) -> dict[str, Any]:
    """The JSON object at ``url``.

    Args:
        url: An https URL (http on loopback only).
        timeout: Seconds allowed for the whole fetch.

    Raises:
        FetchError: The URL is not allowed, the server did not answer 200 in time, or the body is
            not a JSON object of reasonable size.
    """
    problem = check_url(url, "the URL")
    if problem:
        raise FetchError(problem)
    body = _get(url, timeout)
    try:
        document = json.loads(body)
    except ValueError:
        raise FetchError(f"GET {url} did not return JSON") from None
    if not isinstance(document, dict):
        raise FetchError(f"GET {url} did not return a JSON object")
    return document


def _get(url: str, timeout: float) -> bytes:
    """The body of a 200 answer to ``GET url``, within ``timeout`` seconds in all."""
    deadline = time.monotonic() + timeout
    parts = urllib.parse.urlsplit(url)
    conn = _connection(parts, timeout)
    expired = threading.Event()
    # NOTE: the watchdog ends a fetch the server drags out, in whatever phase it is.
    watchdog = threading.Timer(timeout, _abort, args=(conn, expired))
    watchdog.daemon = True
    watchdog.start()
    try:
        path = parts.path or "/"
        conn.request("GET", f"{path}?{parts.query}" if parts.query else path, headers=_HEADERS)
        response = conn.getresponse()
        if response.status in _REDIRECTS:
            location = response.getheader("Location")
            raise FetchError(
                f"{url} redirected ({response.status}) to {location}; redirects are not followed"
            )
        if response.status != 200:
            raise FetchError(f"GET {url} answered HTTP {response.status}")
        return _body(url, response, deadline)
    except FetchError:
        raise
    except (OSError, http.client.HTTPException, ValueError) as exc:
        if expired.is_set():
            raise FetchError(f"GET {url} took longer than {timeout:g} seconds in all") from None
        raise FetchError(f"GET {url} failed: {exc}") from None
    finally:
        watchdog.cancel()
        conn.close()


def _connection(parts: urllib.parse.SplitResult, timeout: float) -> http.client.HTTPConnection:
    host, port = parts.hostname or "", parts.port
    if parts.scheme == "https":
        return http.client.HTTPSConnection(
            host, port, timeout=timeout, context=ssl.create_default_context()
        )
    return http.client.HTTPConnection(host, port, timeout=timeout)


def _body(url: str, response: http.client.HTTPResponse, deadline: float) -> bytes:
    length = response.getheader("Content-Length")
    if length is not None and length.isdigit() and int(length) > MAX_DOCUMENT_BYTES:
        raise FetchError(f"GET {url} returned more than {MAX_DOCUMENT_BYTES} bytes")
    chunks: list[bytes] = []
    size = 0
    while size <= MAX_DOCUMENT_BYTES:
        if time.monotonic() >= deadline:
            raise FetchError(f"GET {url} took longer than the time allowed in all")
        chunk = response.read1(MAX_DOCUMENT_BYTES + 1 - size)
        if not chunk:
            return b"".join(chunks)
        chunks.append(chunk)
        size += len(chunk)
    raise FetchError(f"GET {url} returned more than {MAX_DOCUMENT_BYTES} bytes")


def _abort(conn: http.client.HTTPConnection, expired: threading.Event) -> None:
    """End a fetch past its deadline: a read blocked on the socket returns at once."""
    expired.set()
    sock = conn.sock
    if sock is not None:
        with contextlib.suppress(OSError):  # already closed: nothing to end
            sock.shutdown(socket.SHUT_RDWR)
