"""A request answered before its body was read: the rest is drained (bounded), or the connection
is closed with ``Connection: close``, so the next request on a kept-alive connection is answered.

NOTE: the host refuses many requests before reading their body (401 without a token, 406, 413,
415, 429): an unread body stays on the connection. gunicorn drains at most 64 KB of it once the
response is sent, and closes the connection when there was more, after a response that said
``keep-alive``: the client's next request on it was lost without an answer (a 70 KB body refused
with 401, then a retry with a fresh token). :class:`Drained` wraps the worker's app and, before
the response's headers go out, reads what is left of the body, up to :data:`DRAIN_MAX` bytes
within :data:`DRAIN_S`; a body it cannot finish marks the request to close, so gunicorn sends
``Connection: close`` and the client knows to open a new connection. Every request of the worker
passes here, whichever path serves it (gunicorn's own, or the thread that serves its
connection's next request itself, :mod:`host.serve.worker`).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterable
from typing import Any

__all__ = ["DRAIN_MAX", "DRAIN_S", "Drained", "serving"]

#: The most bytes of an unread body drained to keep its connection; past it, the connection closes.
DRAIN_MAX = 256 * 1024
#: The longest a drain waits for a client still sending its body.
DRAIN_S = 1.0

_serving = threading.local()

StartResponse = Callable[..., Any]
App = Callable[[dict[str, Any], StartResponse], Iterable[bytes]]


def serving(request: Any) -> None:
    """Note the gunicorn request the calling thread serves now (None: none)."""
    _serving.request = request


class Drained:
    """The worker's WSGI app, each response sent only once the request's body is read or let go.

    Args:
        app: The host's app.
    """

    def __init__(self, app: App) -> None:
        self.app = app

    def __call__(self, environ: dict[str, Any], start_response: StartResponse) -> Iterable[bytes]:
        """Call the app; before its response starts, drain the body or mark it to close."""

        def start(status: str, headers: list[tuple[str, str]], exc_info: Any = None) -> Any:
            if not _drained(environ):
                request = getattr(_serving, "request", None)
                if request is not None:
                    request.must_close = True  # NOTE: gunicorn then says Connection: close
            return start_response(status, headers, exc_info)

        return self.app(environ, start)


def _drained(environ: dict[str, Any]) -> bool:
    """Whether the request's body has been read to its end (reading what is left, bounded)."""
    body = environ.get("wsgi.input")
    reader = getattr(body, "reader", None)
    left = getattr(reader, "length", None)
    if isinstance(left, int):
        if left == 0:
            return True  # NOTE: the common case (read by the app, or none): no system call
        if left > DRAIN_MAX:
            return False
    sock = environ.get("gunicorn.socket")
    if body is None or sock is None:
        return True
    deadline = time.monotonic() + DRAIN_S
    drained = 0
    try:
        prior = sock.gettimeout()
        try:
            while drained <= DRAIN_MAX:
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    return False
                sock.settimeout(remaining)
                data = body.read(8192)
                if not data:
                    return True
                drained += len(data)
            return False
        finally:
            sock.settimeout(prior)
    except Exception:  # NOTE: a client gone, too slow, or a malformed chunk: close, never raise
        return False
