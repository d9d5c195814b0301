"""``POST /mcp`` served by the worker itself, without gunicorn's per-request environ and response.

NOTE: for every request gunicorn makes a ``Response`` and an environ (an error stream's wrapper, an
early-hints callback), checks each response header with two patterns, formats the date, runs its
request hooks and access log's checks, and sends the head and the body apart. Served, that was
some 190k instructions and a sixth of a plain call's server CPU, as much as every guarantee of
the host together (``bench/RESULTS.md``, 2026-12-05). The host's answers to ``POST /mcp`` are
JSON bodies made whole before they are returned, so :class:`Direct` builds the same environ keys
from gunicorn's parsed request (its URL scheme and forwarding rules included: the parser applied
them), checks the headers by the same rules, and sends the answer in one ``sendall``. A streamed
answer (a legacy question's event stream) is written by gunicorn's own ``Response``.

Everything else takes gunicorn's path: another method or path, HTTP/1.0, ``Expect:
100-continue``, a PROXY-protocol peer, a Unix socket, ``SCRIPT_NAME``, and any worker with an
access log or request hooks configured. ``wsgi.early_hints`` is not offered here; the host sends
none.
"""

from __future__ import annotations

import os
import re
import time
from collections.abc import Iterable
from email.utils import formatdate
from typing import Any

from gunicorn import SERVER, util
from gunicorn.http import wsgi

__all__ = ["Direct"]

#: RFC 9110's token (a header's name) and field value (no control character but tab).
_TOKEN = re.compile(r"[!#$%&'*+.^_`|~0-9A-Za-z-]+")
_VALUE = re.compile(r"[^\x00-\x08\x0a-\x1f\x7f]*")
_BLANKS = " \t"
#: Headers the server writes itself: the app's are dropped (gunicorn drops the hop-by-hop ones).
_SERVERS_OWN = frozenset(
    ("connection", "keep-alive", "proxy-authenticate", "proxy-authorization", "te", "trailers",
     "transfer-encoding", "upgrade", "content-length")
)  # fmt: skip


class Direct:
    """One worker's direct path for ``POST /mcp``.

    Args:
        worker: The gthread worker (its app, settings, and keep-alive bookkeeping).
    """

    def __init__(self, worker: Any) -> None:
        self.worker = worker
        cfg = worker.cfg
        self.enabled = (
            not getattr(worker.log, "access_log_enabled", cfg.accesslog)
            and cfg.settings["pre_request"].value is cfg.settings["pre_request"].default
            and cfg.settings["post_request"].value is cfg.settings["post_request"].default
            and not os.environ.get("SCRIPT_NAME")
        )
        self.base = {**wsgi.base_environ(cfg), "wsgi.multithread": True, "SCRIPT_NAME": ""}
        self._second = 0
        self._date = ""

    def serve(self, req: Any, conn: Any) -> bool | None:
        """Serve ``req`` directly: whether to keep the connection; None to leave it to gunicorn."""
        if not self._takes(req, conn):
            return None
        environ = self._environ(req, conn)
        if environ is None:
            return None
        worker = self.worker
        worker.nr += 1
        if worker.nr >= worker.max_requests and worker.alive:
            worker.log.info("Autorestarting worker after current request.")
            worker.alive = False
        started: list[Any] = []
        written: list[bytes] = []

        def start_response(
            status: str, headers: list[tuple[str, str]], exc_info: Any = None
        ) -> Any:
            if started and not exc_info:
                raise AssertionError("Response headers already set!")
            started[:] = [status, headers]
            return written.append

        result = worker.wsgi(environ, start_response)
        try:
            if isinstance(result, list) and started:
                return self._send(req, conn, started, b"".join([*written, *result]))
            return self._stream(req, conn, started, written, result)
        finally:
            close = getattr(result, "close", None)
            if close is not None:
                close()

    def _takes(self, req: Any, conn: Any) -> bool:
        return (
            self.enabled
            and req.method == "POST"
            and req.path == "/mcp"
            and req.version == (1, 1)
            and not getattr(req, "_expected_100_continue", True)
            and not getattr(req, "proxy_protocol_info", True)
            and isinstance(conn.client, tuple)
            and isinstance(conn.server, tuple)
        )

    def _environ(self, req: Any, conn: Any) -> dict[str, Any] | None:
        """gunicorn's environ for ``req`` (as ``gunicorn.http.wsgi.create`` makes it); None for
        a request that names its own ``SCRIPT_NAME``."""
        environ = dict(self.base)
        for name, value in req.headers:
            if name == "CONTENT-TYPE":
                environ["CONTENT_TYPE"] = value
                continue
            if name == "CONTENT-LENGTH":
                environ["CONTENT_LENGTH"] = value
                continue
            if name == "SCRIPT_NAME":
                return None
            # NOTE: as gunicorn: repeated headers joined with commas, "-" as "_"
            key = "HTTP_" + name.replace("-", "_")
            environ[key] = f"{environ[key]},{value}" if key in environ else value
        environ.update(
            {
                "wsgi.input": req.body,
                "gunicorn.socket": conn.sock,
                "wsgi.url_scheme": req.scheme,
                "REQUEST_METHOD": req.method,
                "QUERY_STRING": req.query,
                "RAW_URI": req.uri,
                "SERVER_PROTOCOL": "HTTP/1.1",
                "PATH_INFO": util.unquote_to_wsgi_str(req.path),
                "REMOTE_ADDR": conn.client[0],
                "REMOTE_PORT": str(conn.client[1]),
                "SERVER_NAME": conn.server[0],
                "SERVER_PORT": str(conn.server[1]),
            }
        )
        return environ

    def _closes(self, req: Any) -> bool:
        """Whether the connection ends with this response (gunicorn's rules for gthread)."""
        worker = self.worker
        return (
            req.should_close()
            or not worker.alive
            or not worker.cfg.keepalive
            or len(worker.keepalived_conns) >= worker.max_keepalived
        )

    def _send(self, req: Any, conn: Any, started: list[Any], body: bytes) -> bool:
        """Write the status, headers and ``body`` in one send; whether to keep the connection."""
        status, headers = started
        close = self._closes(req)
        head = [
            f"HTTP/1.1 {status}\r\nServer: {SERVER}\r\nDate: {self._now()}\r\n"
            f"Connection: {'close' if close else 'keep-alive'}\r\n"
        ]
        for name, value in headers:
            if not _TOKEN.fullmatch(name) or not _VALUE.fullmatch(value):
                raise ValueError(f"the app's response header {name!r} is not a valid header")
            if name.lower() not in _SERVERS_OWN:
                head.append(f"{name}: {value.strip(_BLANKS)}\r\n")
        if status[:3] in ("204", "304"):
            body = b""  # NOTE: RFC 9110: no content, and no Content-Length either
            head.append("\r\n")
        else:
            head.append(f"Content-Length: {len(body)}\r\n\r\n")
        conn.sock.sendall("".join(head).encode("latin-1") + body)
        return not close

    def _stream(
        self, req: Any, conn: Any, started: list[Any], written: list[bytes], result: Iterable[bytes]
    ) -> bool:
        """Write a streamed answer through gunicorn's ``Response``, as its own path does."""
        resp = wsgi.Response(req, conn.sock, self.worker.cfg)
        if self._closes(req):
            resp.force_close()
        try:
            for item in result:
                _catch_up(resp, started, written)
                resp.write(item)
            _catch_up(resp, started, written)
            resp.close()
        except Exception:
            if resp.headers_sent:
                self.worker.log.exception("Error handling request")
                util.close_graceful(conn.sock)
                raise StopIteration() from None
            raise
        return not resp.should_close()

    def _now(self) -> str:
        """The Date header's text, made once a second."""
        second = int(time.time())
        if second != self._second:
            self._date = formatdate(second, usegmt=True)
            self._second = second
        return self._date


def _catch_up(resp: Any, started: list[Any], written: list[bytes]) -> None:
    """Give ``resp`` the status the app started since, and what it wrote by ``write()``."""
    if resp.status is None and started:
        resp.start_response(*started)
    for data in written:
        resp.write(data)
    written.clear()
