"""A crowd of legacy MCP clients, each with a question open on its call's event stream.

Each member is what a 2025-11-25 client does when a tool asks its user: ``initialize`` (forms
declared), then a ``tools/call`` whose ``text/event-stream`` response carries an
``elicitation/create`` request and stays open while the person reads it. The crowd holds every
stream open, can measure other clients' calls meanwhile, and then answers every question (each
answer a separate POST, as the person clicks) and reads each call's final result from its stream.

Everything runs on one asyncio loop over raw sockets, so a thousand members cost the client one
thread. Used by ``bench/questions.py`` and by the tests (``tests/served/test_many_questions.py``).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import statistics
import time
from collections.abc import Awaitable
from dataclasses import dataclass, field
from typing import Any

__all__ = ["Crowd", "Member", "http", "latencies", "percentile"]

LEGACY = "2025-11-25"
MODERN = "2026-07-28"
_ACCEPT = "application/json, text/event-stream"


class Reply:
    """An HTTP response read from a raw stream: status, headers, and a reader for the body."""

    def __init__(self, status: int, headers: dict[str, str], reader: asyncio.StreamReader) -> None:
        self.status = status
        self.headers = headers
        self.reader = reader
        self._chunked = "chunked" in headers.get("transfer-encoding", "").lower()
        self._left = 0  # bytes left in the current chunk

    async def body(self) -> bytes:
        """The whole body (Content-Length or chunked)."""
        if self._chunked:
            parts = []
            while chunk := await self._chunk():
                parts.append(chunk)
            return b"".join(parts)
        length = int(self.headers.get("content-length", "0"))
        return await self.reader.readexactly(length) if length else b""

    async def _chunk(self) -> bytes:
        size = int((await self.reader.readline()).split(b";")[0].strip() or b"0", 16)
        data = await self.reader.readexactly(size + 2)
        return data[:-2]

    async def line(self) -> bytes:
        """The next line of a chunked event stream (b"" at its end)."""
        out = b""
        while not out.endswith(b"\n"):
            if self._left == 0:
                size = int((await self.reader.readline()).split(b";")[0].strip() or b"0", 16)
                if size == 0:
                    return out
                self._left = size
            piece = await self.reader.readuntil(b"\n") if self._left > 0 else b""
            if len(piece) > self._left:  # pragma: no cover - a line never spans a chunk end
                raise ValueError("malformed chunk")
            self._left -= len(piece)
            out += piece
            if self._left == 0:
                await self.reader.readexactly(2)
        return out

    async def message(self) -> dict[str, Any] | None:
        """The next JSON-RPC message on the event stream (keep-alives skipped); None at its end."""
        data = None
        while True:
            line = await self.line()
            if not line:
                return None
            line = line.rstrip(b"\r\n")
            if line.startswith(b"data: "):
                data = line[len(b"data: ") :]
            elif not line and data is not None:
                message: dict[str, Any] = json.loads(data)
                return message


async def http(
    port: int,
    body: Any,
    headers: dict[str, str] | None = None,
    *,
    method: str = "POST",
    keep: bool = False,
) -> tuple[Reply, asyncio.StreamWriter]:
    """Send one request on a new connection; the response's head (its body not read yet)."""
    reader, writer = await asyncio.open_connection("127.0.0.1", port, limit=1 << 20)
    data = b"" if body is None else json.dumps(body).encode()
    lines = [f"{method} /mcp HTTP/1.1", f"Host: 127.0.0.1:{port}", f"Accept: {_ACCEPT}"]
    if body is not None:
        lines += ["Content-Type: application/json", f"Content-Length: {len(data)}"]
    if not keep:
        lines.append("Connection: close")
    lines += [f"{k}: {v}" for k, v in (headers or {}).items()]
    writer.write(("\r\n".join(lines) + "\r\n\r\n").encode() + data)
    await writer.drain()
    return await _head(reader), writer


async def _head(reader: asyncio.StreamReader) -> Reply:
    head = await reader.readuntil(b"\r\n\r\n")
    status_line, *rest = head.decode("latin-1").split("\r\n")
    found = {}
    for line in rest:
        if ":" in line:
            name, value = line.split(":", 1)
            found[name.strip().lower()] = value.strip()
    return Reply(int(status_line.split()[1]), found, reader)


def _close(writer: asyncio.StreamWriter) -> None:
    with contextlib.suppress(OSError):  # already gone
        writer.close()


@dataclass
class Member:
    """One client: its session, its open call, the question asked, and the call's end."""

    number: int
    session: str = ""
    question: dict[str, Any] | None = None
    result: dict[str, Any] | None = None
    error: str | None = None
    stream: Reply | None = None
    writer: asyncio.StreamWriter | None = None
    answered_at: float = 0.0
    done_at: float = 0.0


@dataclass
class Crowd:
    """``size`` legacy clients of one server, each calling ``tool`` with ``arguments``.

    Args:
        port: The server's port on 127.0.0.1.
        size: How many clients.
        tool: A tool that asks one yes/no question (``confirm``) before it acts.
        arguments: Its arguments.
        at_once: The most requests in flight while opening or answering.
    """

    port: int
    size: int
    tool: str = "close_ticket"
    arguments: dict[str, Any] = field(default_factory=lambda: {"id": "T-1"})
    at_once: int = 100
    members: list[Member] = field(default_factory=list)

    async def open(self, timeout_s: float) -> int:
        """Open every member's question (at most ``timeout_s`` in all); how many are held."""
        self.members = [Member(n) for n in range(self.size)]
        gate = asyncio.Semaphore(self.at_once)

        async def one(member: Member) -> None:
            async with gate:
                await self._open(member)

        await _bounded([one(m) for m in self.members], timeout_s)
        for member in self.members:
            if member.question is None and member.error is None:
                member.error = f"no question within {timeout_s:g}s"
        return self.held()

    def held(self) -> int:
        """How many members have their question open now."""
        return sum(m.question is not None and m.result is None for m in self.members)

    async def _open(self, member: Member) -> None:
        try:
            params = {
                "protocolVersion": LEGACY,
                "capabilities": {"elicitation": {"form": {}}},
                "clientInfo": {"name": "crowd", "version": "1"},
            }
            init = {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": params}
            reply, writer = await http(self.port, init)
            await reply.body()
            _close(writer)
            if reply.status != 200:
                member.error = f"initialize: HTTP {reply.status}"
                return
            member.session = reply.headers["mcp-session-id"]
            body = {
                "jsonrpc": "2.0",
                "id": 1,
                "method": "tools/call",
                "params": {"name": self.tool, "arguments": self.arguments},
            }
            reply, writer = await http(self.port, body, self._headers(member))
            member.writer = writer
            if reply.status != 200 or "event-stream" not in reply.headers.get("content-type", ""):
                member.error = f"tools/call: HTTP {reply.status} {(await reply.body())[:200]!r}"
                _close(writer)
                return
            member.stream = reply
            message = await reply.message()
            if message is None or message.get("method") != "elicitation/create":
                member.error = f"expected a question, got {message!r}"
                _close(writer)
                return
            member.question = message
        except (OSError, asyncio.IncompleteReadError, ValueError, KeyError) as exc:
            member.error = f"{type(exc).__name__}: {exc}"

    def _headers(self, member: Member) -> dict[str, str]:
        return {"Mcp-Session-Id": member.session, "MCP-Protocol-Version": LEGACY}

    async def answer(self, timeout_s: float) -> int:
        """Answer every open question (yes), then read each call's end; how many completed."""
        gate = asyncio.Semaphore(self.at_once)

        async def one(member: Member) -> None:
            assert member.question is not None and member.stream is not None
            async with gate:
                try:
                    answer = {
                        "jsonrpc": "2.0",
                        "id": member.question["id"],
                        "result": {"action": "accept", "content": {"confirm": True}},
                    }
                    member.answered_at = time.monotonic()
                    reply, writer = await http(self.port, answer, self._headers(member))
                    await reply.body()
                    _close(writer)
                    if reply.status != 202:
                        member.error = f"answer: HTTP {reply.status}"
                        return
                except (OSError, asyncio.IncompleteReadError, ValueError) as exc:
                    member.error = f"answer: {type(exc).__name__}: {exc}"
                    return
            try:
                message = await member.stream.message()
            except (OSError, asyncio.IncompleteReadError, ValueError) as exc:
                member.error = f"result: {type(exc).__name__}: {exc}"
                return
            finally:
                if member.writer is not None:
                    _close(member.writer)
            member.done_at = time.monotonic()
            if message is None or "result" not in message:
                member.error = f"expected the call's result, got {message!r}"
                return
            member.result = message["result"]

        waiting = [m for m in self.members if m.question is not None and m.result is None]
        await _bounded([one(m) for m in waiting], timeout_s)
        for member in waiting:
            if member.result is None and member.error is None:
                member.error = f"no result within {timeout_s:g}s of the answer"
        return self.completed()

    def completed(self) -> int:
        """How many members' calls ended with a result."""
        return sum(m.result is not None for m in self.members)

    def errors(self) -> list[str]:
        """The distinct errors members met, most frequent first, with their counts."""
        counts: dict[str, int] = {}
        for member in self.members:
            if member.error is not None:
                counts[member.error] = counts.get(member.error, 0) + 1
        return [f"{n} x {e}" for e, n in sorted(counts.items(), key=lambda kv: -kv[1])]

    def close(self) -> None:
        """Close every member's connection."""
        for member in self.members:
            if member.writer is not None:
                _close(member.writer)


async def _bounded(work: list[Awaitable[None]], timeout_s: float) -> None:
    tasks = [asyncio.ensure_future(w) for w in work]
    if not tasks:
        return
    _, pending = await asyncio.wait(tasks, timeout=timeout_s)
    for task in pending:
        task.cancel()
    await asyncio.gather(*pending, return_exceptions=True)


async def latencies(
    port: int, calls: int, connections: int = 4, timeout_s: float = 10.0, within_s: float = 60.0
) -> tuple[list[float], int]:
    """Time ``calls`` modern read-only calls (``list_outbox``), each on a new connection.

    Args:
        port: The server's port on 127.0.0.1.
        calls: How many calls.
        connections: How many at a time.
        timeout_s: How long one call may take before it counts as failed.
        within_s: When to stop starting calls; those never started count as failed.

    Returns:
        Each answered call's latency in seconds, and how many calls failed (an HTTP status
        other than 200, a time-out, a refused connection, or never started).
    """
    meta = {
        "io.modelcontextprotocol/protocolVersion": MODERN,
        "io.modelcontextprotocol/clientCapabilities": {},
    }
    body = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "tools/call",
        "params": {"name": "list_outbox", "arguments": {}, "_meta": meta},
    }
    headers = {
        "MCP-Protocol-Version": MODERN,
        "Mcp-Method": "tools/call",
        "Mcp-Name": "list_outbox",
    }
    taken: list[float] = []
    failed = 0
    left = calls
    stop = time.monotonic() + within_s

    async def one() -> bool:
        reply, writer = await http(port, body, headers)
        try:
            await reply.body()
        finally:
            _close(writer)
        return reply.status == 200

    async def client() -> None:
        nonlocal left, failed
        while left > 0 and time.monotonic() < stop:
            left -= 1
            began = time.monotonic()
            try:
                if await asyncio.wait_for(one(), timeout_s):
                    taken.append(time.monotonic() - began)
                    continue
            except (TimeoutError, OSError, asyncio.IncompleteReadError):
                pass
            failed += 1

    await asyncio.gather(*(client() for _ in range(connections)))
    return taken, failed + left


def percentile(values: list[float], fraction: float) -> float:
    """The value at ``fraction`` (0..1) of the sorted values; NaN for none."""
    if not values:
        return float("nan")
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(fraction * len(ordered)))]


def median(values: list[float]) -> float:
    """The median; NaN for none."""
    return statistics.median(values) if values else float("nan")
