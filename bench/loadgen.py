"""A cheap keep-alive HTTP/1.1 load generator for MCP ``tools/call`` over loopback.

One thread, one ``selectors`` loop, raw non-blocking sockets, request bytes built once. Each of
the ``concurrency`` connections keeps exactly one request in flight (no pipelining). A response is
framed by its ``Content-Length`` header only; the body is never JSON-decoded on the hot path. For
the two-round exchange (question, answer, act) the ``requestState`` of the first response is cut
out with three ``bytes.find`` calls and spliced into pre-built bytes for the second request.

An httpx client tops out near 500 calls/s on this machine; this one spends a few tens of µs of CPU
per call, which :func:`run_load` reports (``client_cpu_us``) so the benchmark can show that the
client is not the bottleneck.
"""

from __future__ import annotations

import json
import select
import selectors
import socket
import time
from dataclasses import dataclass, field
from typing import Any

__all__ = [
    "PROTOCOL_VERSION",
    "Exchange",
    "LoadError",
    "LoadResult",
    "Plain",
    "build_request",
    "percentile",
    "request_once",
    "run_load",
]

PROTOCOL_VERSION = "2026-07-28"
_META = {
    "io.modelcontextprotocol/protocolVersion": PROTOCOL_VERSION,
    "io.modelcontextprotocol/clientCapabilities": {"elicitation": {"form": {}}},
    "io.modelcontextprotocol/clientInfo": {"name": "bench-loadgen", "version": "1.0"},
}
_STATE_KEY = b'"requestState"'
_RECV = 262144


class LoadError(RuntimeError):
    """The load run could not go on: a refused connection, a malformed response, a time-out."""


def _head(port: int, method: str, name: str | None, length: int) -> bytes:
    lines = [
        "POST /mcp HTTP/1.1",
        f"Host: 127.0.0.1:{port}",
        "Content-Type: application/json",
        "Accept: application/json, text/event-stream",
        f"MCP-Protocol-Version: {PROTOCOL_VERSION}",
        f"Mcp-Method: {method}",
    ]
    if name is not None:
        lines.append(f"Mcp-Name: {name}")
    lines.append(f"Content-Length: {length}")
    return ("\r\n".join(lines) + "\r\n\r\n").encode("ascii")


def _body(method: str, params: dict[str, Any], request_id: int) -> bytes:
    full = {**params, "_meta": _META}
    message = {"jsonrpc": "2.0", "id": request_id, "method": method, "params": full}
    return json.dumps(message, separators=(",", ":")).encode()


def build_request(port: int, method: str, params: dict[str, Any], request_id: int = 1) -> bytes:
    """The complete bytes of one modern MCP request (headers that agree with the body)."""
    body = _body(method, params, request_id)
    name = params.get("name") if method == "tools/call" else None
    return _head(port, method, name, len(body)) + body


@dataclass(frozen=True)
class Plain:
    """One request per operation: the same bytes every time."""

    request: bytes


@dataclass(frozen=True)
class Exchange:
    """Two requests per operation: a call, then the same call with answers and ``requestState``.

    ``second_head`` is the header block up to (not including) the ``Content-Length`` value; the
    body of the second request is ``body_prefix + state + body_suffix``.
    """

    first: bytes
    second_head: bytes
    body_prefix: bytes
    body_suffix: bytes

    @classmethod
    def build(
        cls, port: int, name: str, arguments: dict[str, Any], responses: dict[str, Any]
    ) -> Exchange:
        """Pre-build both rounds of a ``tools/call`` exchange whose answers are ``responses``."""
        first = build_request(port, "tools/call", {"name": name, "arguments": arguments}, 1)
        marker = "\x00STATE\x00"
        params = {
            "name": name,
            "arguments": arguments,
            "inputResponses": responses,
            "requestState": marker,
        }
        body = _body("tools/call", params, 2)
        prefix, suffix = body.split(json.dumps(marker).encode()[1:-1], 1)
        head = _head(port, "tools/call", name, 0)
        head = head[: head.rindex(b"Content-Length: ") + len(b"Content-Length: ")]
        return cls(first, head, prefix, suffix)

    def second(self, state: bytes) -> bytes:
        """The bytes of the second round, carrying ``state`` exactly as the server sent it."""
        length = len(self.body_prefix) + len(state) + len(self.body_suffix)
        return b"".join(
            (self.second_head, b"%d\r\n\r\n" % length, self.body_prefix, state, self.body_suffix)
        )


@dataclass
class LoadResult:
    """What one load run measured. Latencies are in seconds, one per operation."""

    operations: int
    requests: int
    seconds: float
    latencies: list[float] = field(repr=False)
    errors: int
    client_cpu_seconds: float
    first_error: str | None = None

    @property
    def rate(self) -> float:
        """Operations per second."""
        return self.operations / self.seconds if self.seconds else 0.0

    @property
    def client_cpu_us(self) -> float:
        """The load generator's own CPU time per request, in µs."""
        return 1e6 * self.client_cpu_seconds / self.requests if self.requests else 0.0

    def p(self, q: float) -> float:
        """The ``q``-th percentile latency in milliseconds."""
        return 1e3 * percentile(self.latencies, q)


def percentile(values: list[float], q: float) -> float:
    """Nearest-rank percentile of ``values`` (0 when empty)."""
    if not values:
        return 0.0
    ordered = sorted(values)
    rank = max(0, min(len(ordered) - 1, round(q / 100 * len(ordered) + 0.5) - 1))
    return ordered[rank]


def _split_response(buf: bytearray) -> tuple[int, bytes, bool] | None:
    """Cut one complete response off the front of ``buf``: (status, body, server closes)."""
    end = buf.find(b"\r\n\r\n")
    if end < 0:
        return None
    head = bytes(buf[:end]).lower()
    at = head.find(b"\r\ncontent-length:")
    if at < 0:
        raise LoadError(f"response without Content-Length: {bytes(buf[:end])[:300]!r}")
    stop = head.find(b"\r\n", at + 2)
    length = int(head[at + 17 : stop if stop >= 0 else len(head)])
    total = end + 4 + length
    if len(buf) < total:
        return None
    status = int(head[9:12])
    body = bytes(buf[end + 4 : total])
    del buf[:total]
    return status, body, b"\r\nconnection: close" in head


def _bad(status: int, body: bytes) -> bool:
    return (
        status != 200
        or b'"error"' in body
        or b'"isError":true' in body
        or b'"isError": true' in body
    )


class _Conn:
    __slots__ = ("buf", "pending", "round", "sock", "started")

    def __init__(self, sock: socket.socket) -> None:
        self.sock = sock
        self.buf = bytearray()
        self.pending = b""
        self.round = 0
        self.started = 0.0


def _connect(port: int, deadline: float) -> socket.socket:
    while True:
        try:
            sock = socket.create_connection(("127.0.0.1", port), timeout=5)
        except OSError as exc:
            if time.monotonic() > deadline:
                raise LoadError(f"cannot connect to 127.0.0.1:{port}: {exc}") from exc
            time.sleep(0.05)
            continue
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        sock.setblocking(False)
        return sock


def _send(conn: _Conn, data: bytes) -> None:
    view = memoryview(data)
    while view:
        try:
            sent = conn.sock.send(view)
        except BlockingIOError:
            select.select([], [conn.sock], [], 5)
            continue
        view = view[sent:]


def _reopen(sel: selectors.BaseSelector, conn: _Conn, port: int, deadline: float) -> None:
    sel.unregister(conn.sock)
    conn.sock.close()
    conn.sock = _connect(port, deadline)
    conn.buf.clear()
    sel.register(conn.sock, selectors.EVENT_READ, conn)


def run_load(
    port: int,
    work: Plain | Exchange,
    operations: int,
    concurrency: int = 16,
    timeout: float = 120.0,
) -> LoadResult:
    """Run ``operations`` operations over ``concurrency`` keep-alive connections.

    Stops by itself after ``operations`` or ``timeout`` seconds (then raises :class:`LoadError`),
    and always closes its sockets. A connection the server closes is reopened and its request sent
    again; an answer that is not a clean 200 result counts as an error.
    """
    load = _Load(port, work, operations, time.monotonic() + timeout)
    cpu0 = time.process_time()
    try:
        seconds = load.run(concurrency, timeout)
    finally:
        load.close()
    return LoadResult(
        operations=len(load.latencies),
        requests=load.requests,
        seconds=seconds,
        latencies=load.latencies,
        errors=load.errors,
        client_cpu_seconds=time.process_time() - cpu0,
        first_error=load.first_error,
    )


class _Load:
    """One :func:`run_load`: its connections, and what they have done so far."""

    def __init__(self, port: int, work: Plain | Exchange, operations: int, deadline: float) -> None:
        self.port = port
        self.operations = operations
        self.deadline = deadline
        self.exchange = isinstance(work, Exchange)
        self.first = work.first if isinstance(work, Exchange) else work.request
        self.splice = work.second if isinstance(work, Exchange) else None
        self.sel = selectors.DefaultSelector()
        self.conns: list[_Conn] = []
        self.latencies: list[float] = []
        self.issued = self.requests = self.errors = 0
        self.first_error: str | None = None

    def run(self, concurrency: int, timeout: float) -> float:
        """Every operation done: the seconds they took, from the first request sent."""
        clock = time.perf_counter
        for _ in range(min(concurrency, self.operations)):
            self.conns.append(_Conn(_connect(self.port, self.deadline)))
        t0 = clock()
        for conn in self.conns:
            self.sel.register(conn.sock, selectors.EVENT_READ, conn)
            self.issued += 1
            conn.round, conn.pending, conn.started = 0, self.first, clock()
            _send(conn, self.first)
        active = len(self.conns)
        while active:
            events = self.sel.select(1.0)
            if time.monotonic() > self.deadline:
                raise LoadError(
                    f"timed out after {timeout:.0f} s with {len(self.latencies)}/"
                    f"{self.operations} done"
                )
            for key, _mask in events:
                if not self._readable(key.data):
                    active -= 1
        return clock() - t0

    def _readable(self, conn: _Conn) -> bool:
        """Read what ``conn`` has and answer each response; False once it has no more to do."""
        try:
            chunk = conn.sock.recv(_RECV)
        except (BlockingIOError, InterruptedError):
            return True
        except ConnectionError:
            chunk = b""
        if not chunk:
            # NOTE: the server closed the keep-alive connection: reopen and resend.
            _reopen(self.sel, conn, self.port, self.deadline)
            _send(conn, conn.pending)
            return True
        conn.buf += chunk
        while True:
            parsed = _split_response(conn.buf)
            if parsed is None:
                return True
            status, body, closing = parsed
            self.requests += 1
            nxt = self._next(conn, status, body)
            if nxt is None:
                self.sel.unregister(conn.sock)
                conn.sock.close()
                return False
            if closing:
                _reopen(self.sel, conn, self.port, self.deadline)
            conn.pending = nxt
            _send(conn, nxt)

    def _next(self, conn: _Conn, status: int, body: bytes) -> bytes | None:
        """The request ``conn`` sends after this response, or None when no operation is left."""
        now = time.perf_counter()
        bad = False
        if self.exchange and conn.round == 0:
            at = body.find(_STATE_KEY)
            if status == 200 and at >= 0 and self.splice is not None:
                start = body.find(b'"', at + len(_STATE_KEY)) + 1
                conn.round = 1
                return self.splice(body[start : body.find(b'"', start)])
            bad = True
        else:
            bad = _bad(status, body)
        self.latencies.append(now - conn.started)
        if bad:
            self.errors += 1
            self.first_error = self.first_error or f"{status} {body[:300]!r}"
        if self.issued >= self.operations:
            return None
        self.issued += 1
        conn.round, conn.started = 0, now
        return self.first

    def close(self) -> None:
        """Close every connection and the selector."""
        for conn in self.conns:
            conn.sock.close()
        self.sel.close()


def request_once(port: int, request: bytes, timeout: float = 10.0) -> tuple[int, bytes]:
    """Send one request on a fresh connection and return (status, body); for probes, not timing."""
    with socket.create_connection(("127.0.0.1", port), timeout=timeout) as sock:
        sock.sendall(request)
        buf = bytearray()
        while True:
            parsed = _split_response(buf)
            if parsed is not None:
                return parsed[0], parsed[1]
            chunk = sock.recv(_RECV)
            if not chunk:
                raise LoadError(f"127.0.0.1:{port} closed the connection before answering")
            buf += chunk
