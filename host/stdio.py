"""MCP over stdin/stdout, for clients that launch their servers as processes.

One JSON-RPC message per line in each direction (UTF-8, no embedded newlines); nothing else ever
goes to stdout: logs go to stderr, and so does anything a handler prints. Both eras work on one
connection as they do over HTTP: a message with the modern ``_meta`` is served statelessly; an
``initialize`` opens a legacy session, which this connection then carries on every later message
(the session id plays the part of the ``Mcp-Session-Id`` header).

A legacy tool call that asks the user sends ``elicitation/create`` requests on stdout and reads the
client's responses from stdin, while other messages keep flowing: each ``tools/call`` runs on a
thread of its own, and responses reach it through the store, as they do across HTTP workers. A call
whose request carries a ``progressToken`` writes its ``notifications/progress`` lines as its handler
reports, and one whose client set a log level its ``notifications/message`` lines as its handler
logs, before its response (:mod:`host.protocol.streams`, :mod:`host.protocol.messages`).
"""

from __future__ import annotations

import json
import logging
import os
import sys
import threading
import time
from collections.abc import Mapping
from dataclasses import replace
from pathlib import Path
from typing import IO, Any

from host import jsonvalues
from host.approvals.probe import inbox_problem
from host.assembly import assemble
from host.auth import ANONYMOUS, Identity, local_user
from host.errors import SettingsError
from host.logs import configure_logging
from host.protocol import Endpoint, EventStream, Reply, RequestContext
from host.protocol.jsonrpc import failure, internal_error
from host.settings import Settings

__all__ = ["StdioServer", "main", "open_endpoint"]

log = logging.getLogger("host.stdio")

#: How long, after stdin closes, calls still running may take to finish and answer.
_DRAIN_S = 10.0


class StdioServer:
    """Serves one client over a pair of byte streams.

    Args:
        endpoint: The protocol endpoint.
        reader: Where messages come from (the process's stdin).
        writer: Where messages go (the process's stdout), and nothing else.
        identity: Who the client is; a process launched by its user is that user.

    NOTE: one connection, one client: the legacy session its ``initialize`` opened is carried
    on every later message, as an HTTP client carries ``Mcp-Session-Id``; stdout carries a
    call's notifications and questions as well as its response, as an event stream would.
    """

    def __init__(
        self,
        endpoint: Endpoint,
        reader: IO[bytes],
        writer: IO[bytes],
        *,
        identity: Identity = ANONYMOUS,
    ) -> None:
        self.endpoint = endpoint
        self.reader = reader
        self.writer = writer
        self.identity = identity
        self.session: str | None = None
        self._lock = threading.Lock()
        self._calls: list[threading.Thread] = []

    def serve(self) -> int:
        """Answer messages until stdin closes; the exit status (0)."""
        log.info("serving over stdio", extra={"event": "stdio_started"})
        for line in iter(self.reader.readline, b""):
            line = line.strip()
            if line:
                self._dispatch(line)
        self._drain()
        if self.session is not None:
            # NOTE: the client is gone, and with it the session: end it like an HTTP DELETE.
            self.endpoint.end_session(RequestContext(identity=self.identity, session=self.session))
        log.info("stdin closed", extra={"event": "stdio_stopped"})
        return 0

    def _dispatch(self, line: bytes) -> None:
        request = RequestContext(identity=self.identity, session=self.session, streams=True)
        peek = _peek(line)
        if peek.get("method") == "tools/call" and "id" in peek:
            # NOTE: a call may wait for the user's answer, which arrives on this same stdin.
            thread = threading.Thread(
                target=self._answer, args=(line, request), name="host-stdio-call", daemon=True
            )
            self._calls = [t for t in self._calls if t.is_alive()] + [thread]
            thread.start()
        else:
            self._answer(line, request)

    def _answer(self, line: bytes, request: RequestContext) -> None:
        try:
            reply = self.endpoint.handle(line, request)
        except Exception:  # pragma: no cover - the endpoint turns failures into errors
            log.exception("stdio message failed", extra={"event": "internal_error"})
            return
        session = reply.headers.get("Mcp-Session-Id")
        if session is not None:
            self.session = session
        self._send_reply(reply)

    def _send_reply(self, reply: Reply) -> None:
        if isinstance(reply.stream, EventStream):
            try:
                for message in reply.stream.messages():
                    if message is not None:  # NOTE: keep-alives are for HTTP proxies only
                        self._send(message)
            finally:
                reply.stream.close()
        elif reply.body is not None:
            if reply.body.get("id") is None and "error" in reply.body:
                # NOTE: an error about a response (or a notification) has no request to answer.
                log.warning(
                    "message refused", extra={"event": "stdio_refused", "error": reply.body}
                )
                return
            self._send(reply.body)

    def _send(self, message: Mapping[str, Any]) -> None:
        data = _encode(message)
        with self._lock:
            self.writer.write(data + b"\n")
            self.writer.flush()

    def _drain(self) -> None:
        deadline = time.monotonic() + _DRAIN_S
        for thread in self._calls:
            thread.join(max(0.0, deadline - time.monotonic()))


def _encode(message: Mapping[str, Any]) -> bytes:
    """One line of strict JSON, or an internal error for the message's request when it is none.

    NOTE: a handler's result is made strict JSON where it is made (:mod:`host.jsonvalues`); this
    is the last guard, should any other message hold what no line of JSON can carry: the client
    is answered all the same, and the log has the incident.
    """
    try:
        return _dumps(message)
    except (ValueError, UnicodeEncodeError):
        request_id = message.get("id")
        err = internal_error(str(message.get("method") or "response"))
        return _dumps(failure(request_id if isinstance(request_id, str | int) else None, err))


def _dumps(message: Mapping[str, Any]) -> bytes:
    text = jsonvalues.dumps(message, compact=True, allow_nan=False)
    return text.encode("utf-8")


def _peek(line: bytes) -> dict[str, Any]:
    """The message as JSON, only to route it; {} when it is no object (the endpoint says why)."""
    try:
        value = json.loads(line)
    except ValueError:
        return {}
    return value if isinstance(value, dict) else {}


def open_endpoint(
    specs: Path | None = None, handlers: Path | None = None
) -> tuple[Endpoint, Identity]:
    """The endpoint ``host stdio`` serves, and who its one client is.

    Specs, store and keys are found as ``host serve`` finds them. The client is the
    operating-system user who launched the host, holding every scope the tools need: whoever
    can start the host can already do anything it does. Specs whose tools ask people on the
    host's pages (approve steps, URL asks) are served only when ``HOST_PUBLIC_URL`` names a
    running host that serves those pages on the same store (:mod:`host.approvals.probe`).

    Raises:
        host.errors.SpecError: The specs have problems.
        host.errors.SettingsError: Nobody could decide or answer for the tools that need it.
        host.errors.HostError: A setting or the store is unusable.
    """
    settings = Settings.from_env()
    if specs is not None:
        settings = replace(settings, specs_dir=specs)
    if handlers is not None:
        settings = replace(settings, handlers_dir=handlers)
    # NOTE: stdio has no /metrics to read them from, so nothing is collected.
    served = assemble(replace(settings, metrics=False))
    deciding = sorted(name for name, m in served.machines.items() if m.signs_in)
    problem = None
    if deciding:
        problem = inbox_problem(served.store, settings.auth.browser.public_url, deciding)
    if problem is not None:
        served.store.close()
        raise SettingsError(problem, "HOST_PUBLIC_URL")
    scopes = frozenset().union(*(m.scopes for m in served.machines.values()))
    return served.endpoint, replace(local_user(), scopes=scopes)


def main(specs: Path | None = None, handlers: Path | None = None) -> int:
    """Serve the process's stdin and stdout; stdout carries protocol messages only."""
    # NOTE: whatever a handler prints (at import or per call, from Python or from a child
    # process) must not corrupt the protocol stream: file descriptor 1 becomes stderr, and
    # protocol messages go to a copy of the real stdout.
    sys.stdout.flush()
    out = os.fdopen(os.dup(1), "wb")
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    configure_logging(Settings.from_env().log_level, stream=sys.stderr)
    endpoint, identity = open_endpoint(specs, handlers)
    return StdioServer(endpoint, sys.stdin.buffer, out, identity=identity).serve()
