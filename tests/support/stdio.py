"""``host stdio`` in a subprocess, spoken to one line at a time: ``Stdio``."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

__all__ = ["Stdio"]


class Stdio:
    """``host stdio`` in a subprocess, spoken to one line at a time."""

    def __init__(self, tmp_path: Path, *args: str) -> None:
        self.stderr = (tmp_path / "stderr.log").open("w+b")
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "host", "stdio", *args],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self.stderr,
            cwd=tmp_path,
            env={
                "HOST_DATA_DIR": str(tmp_path / "data"),
                "HELPDESK_DB": str(tmp_path / "helpdesk.db"),
                "PATH": "/usr/bin:/bin",
            },
        )

    def send(self, message: Any) -> None:
        assert self.proc.stdin is not None
        data = message if isinstance(message, bytes) else json.dumps(message).encode()
        self.proc.stdin.write(data + b"\n")
        self.proc.stdin.flush()

    def receive(self) -> dict[str, Any]:
        assert self.proc.stdout is not None
        line = self.proc.stdout.readline()
        assert line.endswith(b"\n"), (line, self.logs())
        message: dict[str, Any] = json.loads(line)
        return message

    def close(self) -> tuple[bytes, int]:
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self.proc.stdin.close()
        rest = self.proc.stdout.read()
        return rest, self.proc.wait(timeout=20)

    def logs(self) -> list[dict[str, Any]]:
        self.stderr.seek(0)
        lines = self.stderr.read().decode().splitlines()
        return [json.loads(line) for line in lines if line.startswith("{")]
