"""Real servers for the tests: ``host serve`` or gunicorn in a subprocess on a free 127.0.0.1 port.

Each runs until its ``with`` block ends (terminated, then killed if it lingers), writes its output
to a log file in the test's folder, and is ready (``GET /readyz`` answered) before the block
starts; one that exits or never gets ready fails the test with its log. Also here: what the tests
send such a server over ``http.client`` (a modern ``tools/call``, a stream read as it arrives), how
they find which gunicorn worker holds a connection, and ``host stdio`` fed a script of messages.
Not a test module: ``from servers import ...``.
"""

from __future__ import annotations

import http.client
import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

__all__ = [
    "HEADERS",
    "ROOT",
    "Server",
    "call",
    "clean_env",
    "connections_on_two_workers",
    "free_port",
    "gunicorn",
    "host_serve",
    "run_stdio",
    "send",
    "sse",
    "stop",
    "worker_of",
]

ROOT = Path(__file__).resolve().parent.parent
VERSION = "2026-07-28"
#: What every POST to ``/mcp`` carries; a client that takes both answers' forms.
HEADERS = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream"}


def free_port() -> int:
    """A 127.0.0.1 port that nothing listens on right now."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def clean_env(**extra: str) -> dict[str, str]:
    """This process's environment without HOST_* and HELPDESK_* variables, plus ``extra``.

    NOTE: a developer's own settings (a secret, a store, a help-desk database) must never reach a
    server a test starts.
    """
    env = {k: v for k, v in os.environ.items() if not k.startswith(("HOST_", "HELPDESK_"))}
    env.update(extra)
    return env


def stop(proc: subprocess.Popen[bytes], timeout: float) -> None:
    """Ask a server process to stop (SIGTERM); kill it if it has not within ``timeout`` seconds."""
    proc.terminate()
    try:
        proc.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


class Server:
    """A running server, and its log."""

    def __init__(self, port: int, log: Path, pid: int = 0) -> None:
        self.port = port
        self.url = f"http://127.0.0.1:{port}"
        self.log = log
        self.pid = pid  # the process started: gunicorn's master

    def connect(self) -> http.client.HTTPConnection:
        """A new kept-alive connection to the server."""
        return http.client.HTTPConnection("127.0.0.1", self.port, timeout=15)

    def log_lines(self, event: str) -> list[dict[str, Any]]:
        """Every JSON log line written so far whose ``event`` is ``event``."""
        found = []
        for raw in self.log.read_text().splitlines():
            if raw.startswith("{"):
                line = json.loads(raw)
                if line.get("event") == event:
                    found.append(line)
        return found

    def calls(self) -> list[dict[str, Any]]:
        """Every ``tool_call`` log line written so far."""
        return self.log_lines("tool_call")

    def wait_for(self, event: str, count: int) -> list[dict[str, Any]]:
        """The ``event`` log lines, once there are ``count`` (or after 5 s, those there are)."""
        deadline = time.monotonic() + 5
        while len(lines := self.log_lines(event)) < count and time.monotonic() < deadline:
            time.sleep(0.02)
        return lines


@contextmanager
def _running(
    what: str,
    argv: Sequence[str],
    args: Sequence[str],
    tmp_path: Path,
    name: str,
    env: Mapping[str, str],
) -> Iterator[Server]:
    """Run ``argv --bind 127.0.0.1:PORT args`` in ``tmp_path`` until ready; stop it at the end.

    A ``{port}`` in an ``env`` value becomes the port (an audience names the server's own URL).
    """
    port = free_port()
    log = tmp_path / f"{name}.log"
    values = {"HOST_DATA_DIR": str(tmp_path / name), **env}
    environ = clean_env(**{k: v.replace("{port}", str(port)) for k, v in values.items()})
    with log.open("wb") as out:
        proc = subprocess.Popen(
            [*argv, "--bind", f"127.0.0.1:{port}", *args],
            env=environ, cwd=tmp_path, stdout=out, stderr=subprocess.STDOUT,
        )  # fmt: skip
        try:
            deadline = time.monotonic() + 30
            while True:
                try:
                    with urllib.request.urlopen(f"http://127.0.0.1:{port}/readyz", timeout=2):
                        break
                except OSError:
                    pass
                if proc.poll() is not None or time.monotonic() > deadline:
                    pytest.fail(f"{what} did not start:\n{log.read_text()}", pytrace=False)
                time.sleep(0.1)
            yield Server(port, log, proc.pid)
        finally:
            stop(proc, 15)


@contextmanager
def host_serve(
    tmp_path: Path,
    name: str,
    *args: str,
    specs: Path = ROOT / "specs",
    handlers: Path | None = None,
    **env: str,
) -> Iterator[Server]:
    """``host serve`` of ``specs`` (the help desk by default), its data in ``tmp_path / name``.

    Args:
        tmp_path: the folder it runs in; its log is ``tmp_path / f"{name}.log"``.
        name: names its log and its data folder (HOST_DATA_DIR, unless ``env`` gives one).
        *args: more ``host serve`` options (``--workers``, ``--threads``).
        specs: the specs folder.
        handlers: the handlers folder, if not the one beside ``specs``.
        **env: environment variables on top of the clean environment.
    """
    argv = [sys.executable, "-m", "host", "serve", "--specs", str(specs)]
    if handlers is not None:
        argv += ["--handlers", str(handlers)]
    with _running("host serve", argv, args, tmp_path, name, env) as server:
        yield server


@contextmanager
def gunicorn(tmp_path: Path, name: str, *args: str, **env: str) -> Iterator[Server]:
    """``gunicorn host.web.wsgi:app``, configured by ``env`` (HOST_SPECS, HOST_SECRET, ...).

    Its log is ``tmp_path / f"{name}.log"``, its data in ``tmp_path / name`` unless ``env`` gives
    a HOST_DATA_DIR; ``args`` are more gunicorn options (``--workers``, ``--worker-class``).
    """
    argv = [sys.executable, "-m", "gunicorn", "host.web.wsgi:app"]
    with _running("gunicorn", argv, args, tmp_path, name, env) as server:
        yield server


def send(conn: http.client.HTTPConnection, body: Any, **headers: str) -> http.client.HTTPResponse:
    """POST a JSON-RPC body to ``/mcp`` on ``conn``; the response, its body not read yet."""
    conn.request("POST", "/mcp", json.dumps(body), {**HEADERS, **headers})
    return conn.getresponse()


def sse(response: http.client.HTTPResponse) -> Iterator[dict[str, Any]]:
    """The JSON-RPC messages of a ``text/event-stream`` response, as they arrive."""
    data = None
    while line := response.readline():
        line = line.rstrip(b"\r\n")
        if line.startswith(b"data: "):
            data = line[len(b"data: ") :]
        elif not line and data is not None:
            yield json.loads(data)
            data = None


def call(
    conn: http.client.HTTPConnection, name: str, arguments: dict[str, Any], **extra: Any
) -> dict[str, Any]:
    """One modern tools/call on a kept-alive connection; the JSON-RPC result."""
    params = {
        "name": name,
        "arguments": arguments,
        **extra,
        "_meta": {
            "io.modelcontextprotocol/protocolVersion": VERSION,
            "io.modelcontextprotocol/clientCapabilities": {"elicitation": {"form": {}}},
        },
    }
    body = {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": params}
    headers = {"MCP-Protocol-Version": VERSION, "Mcp-Method": "tools/call", "Mcp-Name": name}
    payload = json.loads(send(conn, body, **headers).read())
    assert "result" in payload, payload
    result: dict[str, Any] = payload["result"]
    return result


def worker_of(server: Server, conn: http.client.HTTPConnection) -> int:
    """The pid of the worker holding ``conn`` (a read-only help-desk call, then its log line)."""
    before = len(server.calls())
    call(conn, "list_outbox", {})
    deadline = time.monotonic() + 5
    while len(server.calls()) == before and time.monotonic() < deadline:
        time.sleep(0.02)
    pid: int = server.calls()[-1]["pid"]
    return pid


def connections_on_two_workers(
    server: Server,
) -> tuple[http.client.HTTPConnection, http.client.HTTPConnection]:
    """Two kept-alive connections held by two different worker processes.

    NOTE: an idle gunicorn may hand every new connection to the same worker. Pausing the worker
    that holds the first connection (SIGSTOP) while the second one is opened and used leaves the
    accept to the other worker, every time.
    """
    first = server.connect()
    home = worker_of(server, first)
    other = server.connect()
    os.kill(home, signal.SIGSTOP)
    try:
        elsewhere = worker_of(server, other)
    finally:
        os.kill(home, signal.SIGCONT)
    assert elsewhere != home
    return first, other


def run_stdio(tmp_path: Path, specs: Path, handlers: Path, lines: Sequence[Any]) -> bytes:
    """``host stdio`` fed ``lines`` (one JSON message each) to the end of its input; its stdout."""
    proc = subprocess.run(
        [sys.executable, "-m", "host", "stdio", "--specs", str(specs), "--handlers", str(handlers)],
        input=b"".join(json.dumps(line).encode() + b"\n" for line in lines),
        capture_output=True,
        cwd=tmp_path,
        env={"HOST_DATA_DIR": str(tmp_path / "data"), "PATH": "/usr/bin:/bin"},
        timeout=30,
        check=True,
    )
    return proc.stdout
