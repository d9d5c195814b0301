"""Fixtures shared by the test files: the help desk in ``tmp_path``, a real redis-server, and real
OAuth 2 authorization servers (``oauth_server``, ``other_oauth_server``, ``fresh_oauth_server``: see
``oauth_server.py``).

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
from collections.abc import Iterator
from pathlib import Path

import pytest
from oauth_server import fresh_oauth_server, oauth_server, other_oauth_server  # noqa: F401
from servers import free_port, stop
from test_legacy_support import Legacy, legacy_client
from test_modern_support import use_tmp_data


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


def _start_redis(exe: str, folder: Path) -> tuple[subprocess.Popen[bytes], int]:
    """Start redis-server on a free port; retried since another process may take the port first."""
    log_path = folder / "redis.log"
    for _ in range(3):
        port = free_port()
        with log_path.open("ab") as log:
            proc = subprocess.Popen(
                [exe, "--port", str(port), "--bind", "127.0.0.1", "--save", "",
                 "--appendonly", "no", "--dir", str(folder)],
                stdout=log, stderr=subprocess.STDOUT,
            )  # fmt: skip
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline and proc.poll() is None:
            if _answers_ping(port):
                return proc, port
            time.sleep(0.05)
        proc.kill()
        proc.wait()
    pytest.fail(f"redis-server did not start; its log:\n{log_path.read_text()}", pytrace=False)


@pytest.fixture(scope="session")
def redis_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """A ``redis://`` URL: $HOST_TEST_REDIS_URL, or a private redis-server started for the session.

    Fails (never skips) without redis-server, since CI must test the Redis backend too.
    """
    given = os.environ.get("HOST_TEST_REDIS_URL")
    if given:
        yield given
        return
    exe = shutil.which("redis-server")
    if exe is None:
        pytest.fail(
            "redis-server is not installed, and the Redis store tests need it: install it "
            "(apt-get install redis-server) or set HOST_TEST_REDIS_URL=redis://host:port/db",
            pytrace=False,
        )
    proc, port = _start_redis(exe, tmp_path_factory.mktemp("redis"))
    try:
        yield f"redis://127.0.0.1:{port}/0"
    finally:
        stop(proc, 5)
