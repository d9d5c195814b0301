"""Spec fixtures for the lock tests: two tools locking [service, environment], one blocking act.

Used as ``from support.locks import ...``. Each act appends ``start``/``end`` lines to
``$LOCK_LOG`` and, when ``$LOCK_GATE`` names a file, waits until that file exists before it ends,
so a test holds the lock exactly as long as it wants and then reads whether acts overlapped.
"""

from __future__ import annotations

import os
import time
from pathlib import Path

SERVER = """
kind: server
name: locks
version: 1.0.0
"""

TOOL = """
kind: tool
name: {name}
description: {name} a service.
annotations: {{destructiveHint: false}}
input:
  properties:
    service: {{type: string}}
    environment: {{type: string}}
    force: {{type: boolean, default: false}}
  required: [service, environment]
steps:
  - act: ops:{name}
    lock: [service, environment]
{extra}"""

HANDLERS = """
import os, time
from pathlib import Path


def _act(what, service, environment):
    log = Path(os.environ["LOCK_LOG"])
    with log.open("a") as f:
        f.write(f"start {what} {service} {environment} {os.getpid()}\\n")
    gate = os.environ.get("LOCK_GATE")
    while gate and not Path(gate).exists():
        time.sleep(0.02)
    with log.open("a") as f:
        f.write(f"end {what} {service} {environment}\\n")
    return {"done": True, "service": service}


def restart_service(service, environment, force=False):
    return _act("restart", service, environment)


def rollback_deploy(service, environment):
    return _act("rollback", service, environment)


def nothing():
    return 'nothing'
"""

BUSY = "    lock_wait: {wait}\n    busy: {{done: false, reason: '{{{{ service }}}} is busy'}}\n"


LIST_OUTBOX = """
kind: tool
name: list_outbox
description: Nothing, read only; the served tests use it to tell which worker holds a connection.
annotations: {readOnlyHint: true}
input: {}
steps:
  - read: nothing
    call: ops:nothing
result: nothing
"""


def write_specs(root: Path, wait: str = "", **waits: str) -> tuple[Path, Path]:
    """A spec directory with restart_service and rollback_deploy, both locked; (specs, handlers).

    Args:
        wait: Both tools' ``lock_wait`` (with a ``busy`` result); empty: none.
        waits: One tool's ``lock_wait`` by its name, instead.
    """
    specs, handlers = root / "specs", root / "handlers"
    specs.mkdir(parents=True, exist_ok=True)
    handlers.mkdir(exist_ok=True)
    (specs / "server.yaml").write_text(SERVER)
    (specs / "list_outbox.yaml").write_text(LIST_OUTBOX)
    for name in ("restart_service", "rollback_deploy"):
        written = waits.get(name, wait)
        extra = BUSY.format(wait=written) if written else ""
        (specs / f"{name}.yaml").write_text(TOOL.format(name=name, extra=extra))
    (handlers / "ops.py").write_text(HANDLERS)
    return specs, handlers


def events(log: Path) -> list[str]:
    """The acts' ``start``/``end`` lines, in order."""
    return log.read_text().splitlines() if log.exists() else []


def overlapped(lines: list[str]) -> bool:
    """Whether two acts ever ran at once, by the log's start and end lines."""
    running = 0
    for line in lines:
        running += 1 if line.startswith("start") else -1
        if running > 1:
            return True
    return False


def wait_for_line(log: Path, prefix: str, count: int = 1, timeout: float = 30.0) -> list[str]:
    """The log's lines once ``count`` of them start with ``prefix``."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        lines = events(log)
        if sum(1 for line in lines if line.startswith(prefix)) >= count:
            return lines
        time.sleep(0.02)
    raise AssertionError(f"no {count} {prefix!r} lines in {log}: {events(log)}")


def environ(log: Path, gate: Path) -> dict[str, str]:
    """The variables the handlers read."""
    return {"LOCK_LOG": str(log), "LOCK_GATE": str(gate), "PATH": os.environ.get("PATH", "")}
