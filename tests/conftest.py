"""Fixtures shared by the test files: the help desk in ``tmp_path``, real redis-servers, stores,
and real OAuth 2 authorization servers (``oauth_server``, ``other_oauth_server``,
``fresh_oauth_server``: see ``oauth_server.py``).

A test file that needs a different ``legacy`` client defines its own fixture of that name, which
takes precedence over the one here. (No ``mcp`` here: that name is the host pytest plugin's fixture,
which other test files use.)
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from oauth_server import fresh_oauth_server, oauth_server, other_oauth_server  # noqa: F401
from servers import free_port, stop
from test_legacy_support import Legacy, legacy_client
from test_modern_support import use_tmp_data

from host.store import Store, open_store


@pytest.fixture
def db(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A fresh help-desk database in ``tmp_path``, the one the example handlers use."""
    return use_tmp_data(tmp_path, monkeypatch)


@pytest.fixture
def legacy(tmp_path: Path, db: Path) -> Legacy:
    """A raw legacy client (no session yet) of a fresh help-desk app on ``db``."""
    return legacy_client(tmp_path)


def _answers_ping(port: int) -> bool:
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=0.5) as sock:
            sock.sendall(b"PING\r\n")
            return sock.recv(16).startswith(b"+PONG")
    except OSError:
        return False


def _start_redis(
    exe: str, folder: Path, *extra: str, port: int | None = None
) -> tuple[subprocess.Popen[bytes], int]:
    """Start redis-server on a free port (or ``port``); retried since another process may take it.

    Without ``extra`` arguments it keeps nothing on disk (``--save '' --appendonly no``); ``extra``
    arguments come after those, so ``--appendonly yes`` turns persistence on. Its files go in
    ``folder``, so a restart on the same port and folder finds them.
    """
    log_path = folder / "redis.log"
    for _ in range(3 if port is None else 1):
        chosen = free_port() if port is None else port
        with log_path.open("ab") as log:
            proc = subprocess.Popen(
                [exe, "--port", str(chosen), "--bind", "127.0.0.1", "--save", "",
                 "--appendonly", "no", "--dir", str(folder), *extra],
                stdout=log, stderr=subprocess.STDOUT,
            )  # fmt: skip
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline and proc.poll() is None:
            if _answers_ping(chosen):
                return proc, chosen
            time.sleep(0.05)
        proc.kill()
        proc.wait()
    pytest.fail(f"redis-server did not start; its log:\n{log_path.read_text()}", pytrace=False)


def _redis_exe() -> str:
    exe = shutil.which("redis-server")
    if exe is None:
        pytest.fail(
            "redis-server is not installed, and the Redis store tests need it: install it "
            "(apt-get install redis-server) or set HOST_TEST_REDIS_URL=redis://host:port/db",
            pytrace=False,
        )
    return exe


class RedisServer:
    """A private redis-server that a test may stop and restart on the same port and folder.

    Args:
        folder: Where it keeps its files (and its log).
        extra: redis-server arguments, e.g. ``("--appendonly", "yes")``.
    """

    def __init__(self, folder: Path, *extra: str) -> None:
        self.folder = folder
        self.extra = extra
        self.proc, self.port = _start_redis(_redis_exe(), folder, *extra)
        self.url = f"redis://127.0.0.1:{self.port}/0"

    def stop(self) -> None:
        """Shut it down as an operator would (SIGTERM: Redis saves what its settings say)."""
        if self.proc.poll() is None:
            stop(self.proc, 10)

    def start(self) -> None:
        """Start it again on the same port, with the same folder and arguments."""
        self.proc, _ = _start_redis(_redis_exe(), self.folder, *self.extra, port=self.port)

    def restart(self) -> None:
        """Stop, then start again."""
        self.stop()
        self.start()


@pytest.fixture
def redis_server(tmp_path: Path) -> Iterator[Callable[..., RedisServer]]:
    """Start private redis-servers with given arguments; all are stopped after the test."""
    started: list[RedisServer] = []

    def start(*extra: str) -> RedisServer:
        folder = tmp_path / f"redis-{len(started)}"
        folder.mkdir()
        server = RedisServer(folder, *extra)
        started.append(server)
        return server

    yield start
    for server in started:
        server.stop()


@pytest.fixture(scope="session")
def redis_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """A ``redis://`` URL: $HOST_TEST_REDIS_URL, or a private redis-server started for the session.

    Fails (never skips) without redis-server, since CI must test the Redis backend too.
    """
    given = os.environ.get("HOST_TEST_REDIS_URL")
    if given:
        yield given
        return
    proc, port = _start_redis(_redis_exe(), tmp_path_factory.mktemp("redis"))
    try:
        yield f"redis://127.0.0.1:{port}/0"
    finally:
        stop(proc, 5)


@pytest.fixture(params=["sqlite", "redis"])
def store_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """Each store test runs twice: on a fresh SQLite file, and on the session's redis-server."""
    if request.param == "redis":
        return str(request.getfixturevalue("redis_url"))
    return f"sqlite:///{tmp_path / 'store.db'}"


@pytest.fixture
def store(store_url: str) -> Iterator[Store]:
    """The store ``store_url`` names, closed after the test."""
    opened = open_store(store_url)
    yield opened
    opened.close()


@pytest.fixture
def key() -> str:
    """A key no other test uses, since one redis-server serves the whole session."""
    return f"test-{uuid.uuid4().hex}"
