"""``lock:`` over real ``host serve`` with two workers, on SQLite and on Redis.

Each act logs its start and end (with its worker's pid) and holds until the test opens a gate, so
the tests see exactly which acts ran at once.
"""

from __future__ import annotations

import contextlib
import http.client
import os
import signal
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest

from support.locks import events, overlapped, wait_for_line, write_specs
from support.modern import call
from support.redis import RedisServer
from support.servers import Server, host_serve
from support.workers import connections_on_two_workers

pytestmark = pytest.mark.served

API = {"service": "api", "environment": "prod"}
WEB = {"service": "web", "environment": "prod"}


@pytest.fixture(params=["sqlite", "redis"])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """The ``HOST_STORE`` of the served host: a SQLite file, or a private redis-server."""
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path / 'store.db'}"
    start: Callable[..., RedisServer] = request.getfixturevalue("redis_server")
    return start("--appendonly", "yes", "--appendfsync", "always").url


@pytest.fixture
def served(tmp_path: Path, store: str) -> Iterator[Server]:
    specs, handlers = write_specs(tmp_path, restart_service="10s", rollback_deploy="1s")
    with host_serve(
        tmp_path,
        "host",
        "--workers",
        "2",
        specs=specs,
        handlers=handlers,
        HOST_STORE=store,
        LOCK_LOG=str(tmp_path / "acts.log"),
        LOCK_GATE=str(tmp_path / "gate"),
    ) as server:
        yield server


def _call(conn: http.client.HTTPConnection, name: str, args: dict[str, Any]) -> dict[str, Any]:
    return call(conn, name, args)


def test_one_act_at_a_time_per_key_across_two_workers(served: Server, tmp_path: Path) -> None:
    log, gate = tmp_path / "acts.log", tmp_path / "gate"
    first, second = connections_on_two_workers(served)
    third = served.connect()
    with ThreadPoolExecutor(3) as pool:
        held = pool.submit(_call, first, "restart_service", API)
        wait_for_line(log, "start")
        waiting = pool.submit(_call, second, "restart_service", API)
        # NOTE: another key is another lock: it acts while the first one is held.
        parallel = pool.submit(_call, third, "rollback_deploy", WEB)
        lines = wait_for_line(log, "start", 2)
        assert "start rollback web" in lines[1]
        # NOTE: the same names and values in another tool: the same lock, busy after 1s.
        started = time.monotonic()
        busy = _call(served.connect(), "rollback_deploy", API)
        assert time.monotonic() - started >= 1.0
        assert busy["structuredContent"] == {"done": False, "reason": "api is busy"}
        assert "isError" not in busy
        time.sleep(0.5)
        assert sum(line.startswith("start restart") for line in events(log)) == 1
        gate.touch()
        for future in (held, waiting, parallel):
            assert future.result(30)["structuredContent"]["done"] is True
    restarts = [line for line in events(log) if " restart " in line]
    assert not overlapped(restarts) and len(restarts) == 4
    pids = {line.split()[-1] for line in restarts if line.startswith("start")}
    assert len(pids) == 2  # the two restarts ran on the two workers
    outcomes = sorted(line["outcome"] for line in served.calls() if line["tool"] != "list_outbox")
    assert outcomes == ["complete"] * 4
    assert [line.get("ending") for line in served.calls() if line.get("ending")] == ["busy"]


def test_a_killed_holder_frees_its_lock_within_its_lease(served: Server, tmp_path: Path) -> None:
    log = tmp_path / "acts.log"
    first, second = connections_on_two_workers(served)
    with ThreadPoolExecutor(1) as pool:
        pool.submit(_killed_call, first)
        lines = wait_for_line(log, "start")
        os.kill(int(lines[0].split()[-1]), signal.SIGKILL)
        started = time.monotonic()
        (tmp_path / "gate").touch()
        after = _call(second, "restart_service", API)
        waited = time.monotonic() - started
    assert after["structuredContent"] == {"done": True, "service": "api"}
    assert waited < 9, waited  # the lease (5 s) lapsed unrenewed; lock_wait is 10 s
    assert [line.split()[0] for line in events(log)] == ["start", "start", "end"]


def _killed_call(conn: http.client.HTTPConnection) -> None:
    # NOTE: its worker is killed mid-act: the connection drops.
    with contextlib.suppress(OSError, http.client.HTTPException):
        _call(conn, "restart_service", API)
