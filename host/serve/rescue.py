"""A request answered again from another thread, when its read on the request's thread is stuck.

``host serve``'s worker lets a round's reads run on the request's own thread
(:mod:`host.machine.watchdog`). When one outruns its limit, the watchdog calls the request's
:class:`Rescue` on a thread of its own: it runs the app again on the very request (its headers
as received, its body as the app read it), with that read timed out at once, writes that answer
to the client with ``Connection: close``, and shuts the socket. The stuck thread, once its read
returns, raises :class:`host.machine.watchdog.Superseded`; the worker then waits for the
rescue's answer to be out and closes the connection, writing nothing of its own.

NOTE: only an HTTP/1 POST through :func:`rescuable` can be rescued (its body is all the app
reads); anything else never sets :data:`host.machine.watchdog.RESCUER`, and its reads hand off to
the pool as everywhere else.
"""

from __future__ import annotations

import _thread
import contextlib
import contextvars
import io
import logging
import socket
from collections.abc import Callable, Iterable
from typing import Any

from gunicorn.http.wsgi import Response

from host.machine.watchdog import RESCUER, TIMED_OUT

__all__ = ["RESCUE_WRITE_S", "Rescue", "WsgiApp", "rescuable", "served", "serving"]

log = logging.getLogger("host.serve")

#: How long a superseded request waits for the rescue's answer before closing the connection.
RESCUE_WRITE_S = 30.0

WsgiApp = Callable[[dict[str, Any], Callable[..., Any]], Iterable[bytes]]

#: The request the current thread serves, while the worker serves it.
_CURRENT: contextvars.ContextVar[Rescue | None] = contextvars.ContextVar(
    "host_rescue", default=None
)


class _Recorded:
    """A request body stream that keeps what the app reads of it, to read it again."""

    def __init__(self, stream: Any) -> None:
        self._stream = stream
        self._read: list[bytes] = []

    def read(self, size: int | None = -1) -> bytes:
        data: bytes = self._stream.read(size)
        self._read.append(data)
        return data

    def readline(self, size: int | None = -1) -> bytes:
        data: bytes = self._stream.readline(size)
        self._read.append(data)
        return data

    def readlines(self, hint: int | None = -1) -> list[bytes]:
        lines: list[bytes] = self._stream.readlines(hint)
        self._read.extend(lines)
        return lines

    def __iter__(self) -> Any:
        return iter(self.readline, b"")

    def body(self) -> bytes:
        return b"".join(self._read)


class Rescue:
    """One request's way to be answered from another thread (see the module's docstring).

    Args:
        app: The worker's WSGI app (unwrapped).
        req: gunicorn's parsed request.
        sock: The connection's socket.
        cfg: gunicorn's settings.
    """

    def __init__(self, app: WsgiApp, req: Any, sock: socket.socket, cfg: Any) -> None:
        self._app = app
        self._req = req
        self._sock = sock
        self._cfg = cfg
        self._environ: dict[str, Any] | None = None
        self._body: _Recorded | None = None
        # NOTE: held until the rescue's answer is out; a lock, not an Event: every request
        # makes one, and few are ever rescued.
        self._written = _thread.allocate_lock()
        self._written.acquire()

    def serve(self, environ: dict[str, Any], start_response: Callable[..., Any]) -> Any:
        """Run the app on the request, its reads rescuable (on the request's thread)."""
        self._environ = dict(environ)
        environ["wsgi.input"] = self._body = _Recorded(environ["wsgi.input"])
        token = RESCUER.set(self.answer)
        try:
            return self._app(environ, start_response)
        finally:
            RESCUER.reset(token)

    def answer(self, tool: str, step: str) -> None:
        """Answer the request again, ``tool``'s read ``step`` timed out (on a thread of its own)."""
        try:
            if self._environ is None or self._body is None:
                return
            environ = {**self._environ, "wsgi.input": io.BytesIO(self._body.body())}
            resp = Response(self._req, self._sock, self._cfg)
            resp.force_close()
            TIMED_OUT.set((tool, step))
            chunks = self._app(environ, resp.start_response)
            try:
                for chunk in chunks:
                    resp.write(chunk)
                resp.close()
            finally:
                close = getattr(chunks, "close", None)
                if close is not None:
                    close()
        except OSError:
            log.info(
                "a read past its limit: the client went before its answer",
                extra={"event": "rescue_client_gone"},
            )
        finally:
            _shut(self._sock)
            self._written.release()

    def wait(self) -> None:
        """Wait until the rescue has written its answer (a superseded request, before it ends)."""
        if not self._written.acquire(timeout=RESCUE_WRITE_S):
            log.error(
                "a read past its limit was not answered in time; the connection is closed",
                extra={"event": "rescue_unwritten"},
            )


def rescuable(app: WsgiApp) -> WsgiApp:
    """``app``, its POSTs served through the worker's :class:`Rescue` for the request, if any."""

    def serve(environ: dict[str, Any], start_response: Callable[..., Any]) -> Any:
        rescue = _CURRENT.get()
        if rescue is None or environ.get("REQUEST_METHOD") != "POST":
            return app(environ, start_response)
        return rescue.serve(environ, start_response)

    return serve


def serving(rescue: Rescue) -> contextvars.Token[Rescue | None]:
    """Make ``rescue`` the current request's (the worker resets the token when it is served)."""
    return _CURRENT.set(rescue)


def served(token: contextvars.Token[Rescue | None]) -> None:
    """The request is served: no rescue is current any more."""
    _CURRENT.reset(token)


def _shut(sock: socket.socket) -> None:
    # NOTE: already shut, or the client closed it first: nothing left to end.
    with contextlib.suppress(OSError):
        sock.shutdown(socket.SHUT_RDWR)
