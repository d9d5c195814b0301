"""Private redis-servers for the store tests: on free ports, stopped and restarted at will."""

from __future__ import annotations

import shutil
import socket
import subprocess
import time
from pathlib import Path

import pytest

from support.servers import free_port, stop

__all__ = ["RedisServer", "redis_exe", "start_redis"]


def _answers_ping(port: int) -> bool:
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=0.5) as sock:
            sock.sendall(b"PING\r\n")
            return sock.recv(16).startswith(b"+PONG")
    except OSError:
        return False


def start_redis(
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


def redis_exe() -> str:
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
        self.proc, self.port = start_redis(redis_exe(), folder, *extra)
        self.url = f"redis://127.0.0.1:{self.port}/0"

    def stop(self) -> None:
        """Shut it down as an operator would (SIGTERM: Redis saves what its settings say)."""
        if self.proc.poll() is None:
            stop(self.proc, 10)

    def start(self) -> None:
        """Start it again on the same port, with the same folder and arguments."""
        self.proc, _ = start_redis(redis_exe(), self.folder, *self.extra, port=self.port)

    def restart(self) -> None:
        """Stop, then start again."""
        self.stop()
        self.start()
