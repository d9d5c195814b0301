"""``host serve --pin-workers``: each worker on a CPU of its own, a replacement on the freed one."""

from __future__ import annotations

import os
import signal
from pathlib import Path

import pytest

from support.servers import Server, host_serve
from support.waiting import wait_until

pytestmark = pytest.mark.served


def _workers(server: Server) -> set[int]:
    children = Path(f"/proc/{server.pid}/task/{server.pid}/children").read_text().split()
    return {int(pid) for pid in children}


def _cpus(pid: int) -> set[int]:
    return os.sched_getaffinity(pid)


def _all_pinned(server: Server) -> bool:
    return all(len(_cpus(pid)) == 1 for pid in _workers(server))


def test_each_worker_keeps_to_a_cpu_and_a_replacement_takes_the_freed_one(tmp_path: Path) -> None:
    allowed = os.sched_getaffinity(0)
    with host_serve(tmp_path, "host", "--workers", "2", "--pin-workers") as server:
        # NOTE: a worker is a child as soon as it is forked, and pins itself a moment later.
        assert wait_until(lambda: len(_workers(server)) == 2 and _all_pinned(server))
        first = {pid: _cpus(pid) for pid in _workers(server)}
        assert all(len(cpus) == 1 and cpus <= allowed for cpus in first.values()), first
        if len(allowed) >= 2:
            assert len(set.union(*first.values())) == 2, first  # not both on one CPU
        assert _cpus(server.pid) == allowed  # the master itself is not pinned

        gone, cpu = next(iter(first.items()))
        os.kill(gone, signal.SIGKILL)
        assert wait_until(lambda: len(_workers(server) - set(first)) == 1, 30)
        (new,) = _workers(server) - set(first)
        assert wait_until(lambda: len(_cpus(new)) == 1), _cpus(new)
        assert _cpus(new) == cpu
        assert "pinned to CPU" in server.log.read_text()


def test_without_the_option_workers_may_use_every_cpu(tmp_path: Path) -> None:
    allowed = os.sched_getaffinity(0)
    with host_serve(tmp_path, "host", "--workers", "1") as server:
        assert wait_until(lambda: len(_workers(server)) == 1)
        assert all(_cpus(pid) == allowed for pid in _workers(server))
