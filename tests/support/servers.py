"""The server runner: ``host serve`` or gunicorn in a subprocess on a free 127.0.0.1 port.

Each runs until its ``with`` block ends (terminated, then killed if it lingers), writes its output
to a log file in the test's folder, and is ready (``GET /readyz`` answered) before the block
starts; one that exits or never gets ready fails the test with its log. Each gets its own port and
data folder, so tests that start servers can run in parallel. Also here: ``host stdio`` fed a
script of messages.
"""

from __future__ import annotations

import contextlib
import http.client
import json
import os
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

from support.paths import ROOT
from support.waiting import wait_until

__all__ = [
    "Server",
    "alive",
    "clean_env",
    "free_port",
    "gunicorn",
    "host_serve",
    "run_stdio",
    "stop",
]


def alive(pid: int) -> bool:
    """Whether process ``pid`` still runs; one that exited counts as gone even before it is reaped.

    NOTE: a master started by a test is the test's child, a zombie until its Popen waits for it;
    a worker is the master's, reaped by it at once.
    """
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    stat = Path(f"/proc/{pid}/stat")
    try:
        return stat.read_text().split(")")[-1].split()[0] != "Z"
    except OSError:
        return False


def free_port() -> int:
    """A 127.0.0.1 port that nothing listens on right now."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _family(pid: int) -> list[int]:
    """``pid`` and every process below it."""
    found, todo = [], [pid]
    while todo:
        current = todo.pop()
        found.append(current)
        try:
            children = Path(f"/proc/{current}/task/{current}/children").read_text().split()
        except OSError:
            continue
        todo.extend(int(child) for child in children)
    return found


def _listens(pid: int, port: int) -> bool:
    """Whether ``pid`` (or a process below it) holds the socket listening on ``port``.

    NOTE: two tests may be handed the same free port; the one whose server then fails to bind
    must not take the other's server, answering ``/readyz`` on that port, for its own.
    """
    inodes = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        with contextlib.suppress(OSError), open(table) as lines:
            for line in list(lines)[1:]:
                fields = line.split()
                if fields[3] == "0A" and int(fields[1].rsplit(":", 1)[1], 16) == port:
                    inodes.add(f"socket:[{fields[9]}]")
    for member in _family(pid):
        with contextlib.suppress(OSError):
            for fd in os.listdir(f"/proc/{member}/fd"):
                with contextlib.suppress(OSError):
                    if os.readlink(f"/proc/{member}/fd/{fd}") in inodes:
                        return True
    return False


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
        self.opened: list[http.client.HTTPConnection] = []

    def connect(self) -> http.client.HTTPConnection:
        """A new kept-alive connection to the server (closed when the server is stopped)."""
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=15)
        self.opened.append(conn)
        return conn

    def close_connections(self) -> None:
        """Close every connection ``connect`` opened.

        NOTE: a gunicorn worker that holds an idle kept-alive connection waits for it up to the
        graceful timeout (10 s) when stopped; the test is over, so its connections can go first.
        """
        for conn in self.opened:
            conn.close()

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
        wait_until(lambda: len(self.log_lines(event)) >= count, 5, 0.02)
        return self.log_lines(event)


def _start(
    argv: Sequence[str], args: Sequence[str], tmp_path: Path, log: Path, env: Mapping[str, str]
) -> tuple[subprocess.Popen[bytes], int, bool]:
    """Start ``argv`` on a free port; the process, its port, and whether it answered /readyz.

    NOTE: the port is free when chosen, but another process may bind it before the server does
    (tests run in parallel); a server that exits saying so is started again on another port.
    """
    for _ in range(3):
        port = free_port()
        environ = clean_env(**{k: v.replace("{port}", str(port)) for k, v in env.items()})
        with log.open("wb") as out:
            proc = subprocess.Popen(
                [*argv, "--bind", f"127.0.0.1:{port}", *args],
                env=environ, cwd=tmp_path, stdout=out, stderr=subprocess.STDOUT,
            )  # fmt: skip
        ready = _ready(proc, port, log)
        if ready is not None:
            return proc, port, ready
    return proc, port, False


def _ready(proc: subprocess.Popen[bytes], port: int, log: Path) -> bool | None:
    """Whether ``proc`` answered ``/readyz`` on ``port`` within 30 s; None when the port was taken
    (by a server that exited saying so, or another test's server answering), so start again."""
    deadline = time.monotonic() + 30
    while proc.poll() is None and time.monotonic() < deadline:
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/readyz", timeout=2):
                pass
        except OSError:
            time.sleep(0.1)
            continue
        if _listens(proc.pid, port):
            return True
        stop(proc, 15)  # another test's server answered: this one could not bind
        return None
    if proc.poll() is not None and "in use" in log.read_text():
        return None
    return False


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
    log = tmp_path / f"{name}.log"
    values = {"HOST_DATA_DIR": str(tmp_path / name), **env}
    proc, port, ready = _start(argv, args, tmp_path, log, values)
    server = Server(port, log, proc.pid)
    try:
        if not ready:
            pytest.fail(f"{what} did not start:\n{log.read_text()}", pytrace=False)
        yield server
    finally:
        server.close_connections()
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
