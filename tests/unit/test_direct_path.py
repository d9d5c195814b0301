"""The direct path for ``POST /mcp`` builds gunicorn's environ and writes gunicorn's answer.

``host.serve.direct`` replaces gunicorn's per-request environ and response for the host's one hot
route; everything a request carries (its forwarding headers, its URL scheme as gunicorn's parser
judged it, repeated headers) must reach the app as gunicorn would have passed it, and every
response header must pass the same checks. These parse real requests with gunicorn's own parser
and compare.
"""

from __future__ import annotations

import socket
from collections.abc import Iterator
from types import SimpleNamespace
from typing import Any

import pytest
from gunicorn.config import Config
from gunicorn.http import wsgi
from gunicorn.http.parser import RequestParser

from host.serve.direct import Direct

CLIENT = ("127.0.0.1", 50123)
SERVER = ("127.0.0.1", 8000)
BODY = b'{"jsonrpc":"2.0","id":1,"method":"tools/list"}'


def _request(head: bytes, body: bytes = BODY) -> Any:
    a, b = socket.socketpair()
    a.sendall(head.replace(b"{n}", str(len(body)).encode()) + b"\r\n\r\n" + body)
    return next(RequestParser(_cfg(), b, CLIENT)), a, b


def _cfg() -> Config:
    cfg = Config()
    cfg.set("worker_class", "gthread")
    return cfg


class _Worker:
    def __init__(self, app: Any = None) -> None:
        self.cfg = _cfg()
        self.log = SimpleNamespace(access_log_enabled=False, lines=[])
        self.log.info = self.log.lines.append
        self.wsgi = app
        self.alive = True
        self.nr = 0
        self.max_requests = 10**9
        self.keepalived_conns: list[Any] = []
        self.max_keepalived = 100


@pytest.fixture
def pair() -> Iterator[list[socket.socket]]:
    made: list[socket.socket] = []
    yield made
    for sock in made:
        sock.close()


def _read(sock: socket.socket) -> bytes:
    sock.settimeout(2)
    data = b""
    while b"\r\n\r\n" not in data:
        data += sock.recv(65536)
    return data


@pytest.mark.parametrize(
    "head",
    [
        b"POST /mcp HTTP/1.1\r\nHost: example.org:8443\r\nContent-Type: application/json\r\n"
        b"Content-Length: {n}\r\nAccept: application/json\r\nAccept: text/event-stream",
        b"POST /mcp HTTP/1.1\r\nHost: h\r\nContent-Length: {n}\r\nX-Forwarded-Proto: https\r\n"
        b"X-Forwarded-For: 203.0.113.9\r\nMcp-Session-Id: s-1\r\nAuthorization: Bearer t",
        b"POST /mcp?x=%2F HTTP/1.1\r\nHost: h\r\nContent-Length: {n}",
    ],
)
def test_the_environ_is_the_one_gunicorn_makes(head: bytes, pair: list[socket.socket]) -> None:
    req, a, b = _request(head)
    pair += [a, b]
    direct = Direct(_Worker())
    conn = SimpleNamespace(sock=b, client=CLIENT, server=SERVER)
    ours = direct._environ(req, conn)
    _, theirs = wsgi.create(req, b, CLIENT, SERVER, _cfg())
    assert ours is not None
    # NOTE: the same keys and values but the error stream (one a worker), the hints (none here)
    # and multithread (gthread sets it after create)
    for key in ("wsgi.errors", "wsgi.multithread"):
        ours.pop(key)
        theirs.pop(key)
    theirs.pop("wsgi.early_hints")
    assert ours == theirs


@pytest.mark.parametrize(
    "head",
    [
        b"GET /mcp HTTP/1.1\r\nHost: h",
        b"POST /other HTTP/1.1\r\nHost: h\r\nContent-Length: {n}",
        b"POST /mcp HTTP/1.0\r\nHost: h\r\nContent-Length: {n}",
        b"POST /mcp HTTP/1.1\r\nHost: h\r\nExpect: 100-continue\r\nContent-Length: {n}",
    ],
)
def test_other_requests_take_gunicorns_path(head: bytes, pair: list[socket.socket]) -> None:
    req, a, b = _request(head, b"" if head.startswith(b"GET") else BODY)
    pair += [a, b]
    conn = SimpleNamespace(sock=b, client=CLIENT, server=SERVER)
    assert Direct(_Worker(app=pytest.fail)).serve(req, conn) is None


def test_a_worker_with_an_access_log_takes_gunicorns_path(pair: list[socket.socket]) -> None:
    req, a, b = _request(b"POST /mcp HTTP/1.1\r\nHost: h\r\nContent-Length: {n}")
    pair += [a, b]
    worker = _Worker(app=pytest.fail)
    worker.log = SimpleNamespace(access_log_enabled=True)
    conn = SimpleNamespace(sock=b, client=CLIENT, server=SERVER)
    assert Direct(worker).serve(req, conn) is None


def _app(status: str, headers: list[tuple[str, str]], body: list[bytes]) -> Any:
    def app(environ: dict[str, Any], start_response: Any) -> Any:
        start_response(status, headers)
        return body

    return app


def test_an_answer_goes_in_one_send_with_gunicorns_head(pair: list[socket.socket]) -> None:
    req, a, b = _request(b"POST /mcp HTTP/1.1\r\nHost: h\r\nContent-Length: {n}")
    pair += [a, b]
    headers = [("content-type", "application/json"), ("content-length", "2"), ("Connection", "x")]
    worker = _Worker(_app("200 OK", headers, [b"{", b"}"]))
    conn = SimpleNamespace(sock=b, client=CLIENT, server=SERVER)
    assert Direct(worker).serve(req, conn) is True
    head, body = _read(a).split(b"\r\n\r\n", 1)
    lines = head.decode().split("\r\n")
    assert lines[0] == "HTTP/1.1 200 OK" and "Connection: keep-alive" in lines
    assert "content-type: application/json" in lines and "Content-Length: 2" in lines
    assert "Connection: x" not in lines and "content-length: 2" not in lines
    assert body == b"{}" and worker.nr == 1


def test_a_request_marked_to_close_says_so_and_ends_the_connection(
    pair: list[socket.socket],
) -> None:
    req, a, b = _request(b"POST /mcp HTTP/1.1\r\nHost: h\r\nContent-Length: {n}")
    pair += [a, b]
    req.must_close = True  # NOTE: what host.serve.drain does for a body it cannot finish
    worker = _Worker(_app("401 Unauthorized", [("content-type", "application/json")], [b"{}"]))
    conn = SimpleNamespace(sock=b, client=CLIENT, server=SERVER)
    assert Direct(worker).serve(req, conn) is False
    assert b"Connection: close\r\n" in _read(a)


@pytest.mark.parametrize(
    "header", [("x-note", "a\r\nSet-Cookie: s=1"), ("x-note", "a\nb"), ("bad name", "v")]
)
def test_a_header_that_could_split_the_response_is_refused_before_a_byte_is_sent(
    header: tuple[str, str], pair: list[socket.socket]
) -> None:
    req, a, b = _request(b"POST /mcp HTTP/1.1\r\nHost: h\r\nContent-Length: {n}")
    pair += [a, b]
    conn = SimpleNamespace(sock=b, client=CLIENT, server=SERVER)
    with pytest.raises(ValueError, match="not a valid header"):
        Direct(_Worker(_app("200 OK", [header], [b"{}"]))).serve(req, conn)
    a.setblocking(False)
    with pytest.raises(BlockingIOError):
        a.recv(10)


def test_a_streamed_answer_is_written_by_gunicorns_response(pair: list[socket.socket]) -> None:
    req, a, b = _request(b"POST /mcp HTTP/1.1\r\nHost: h\r\nContent-Length: {n}")
    pair += [a, b]

    def app(environ: dict[str, Any], start_response: Any) -> Any:
        start_response("200 OK", [("content-type", "text/event-stream")])
        yield b"event: message\n\n"
        yield b"data: {}\n\n"

    conn = SimpleNamespace(sock=b, client=CLIENT, server=SERVER)
    assert Direct(_Worker(app)).serve(req, conn) is True
    data = _read(a)
    while not data.endswith(b"0\r\n\r\n"):
        data += a.recv(65536)
    assert b"Transfer-Encoding: chunked" in data and b"data: {}\n\n" in data


def test_the_request_that_reaches_max_requests_closes_and_stops_the_worker(
    pair: list[socket.socket],
) -> None:
    req, a, b = _request(b"POST /mcp HTTP/1.1\r\nHost: h\r\nContent-Length: {n}")
    pair += [a, b]
    worker = _Worker(_app("200 OK", [("content-type", "application/json")], [b"{}"]))
    worker.max_requests = 1
    conn = SimpleNamespace(sock=b, client=CLIENT, server=SERVER)
    assert Direct(worker).serve(req, conn) is False
    assert b"Connection: close\r\n" in _read(a)
    assert worker.alive is False and worker.log.lines == [
        "Autorestarting worker after current request."
    ]
