"""``host serve --pin-workers``: each gunicorn worker kept on a CPU of its own.

NOTE: a worker runs Python on one GIL, so it never uses more than about one CPU; yet the kernel
moves its threads between CPUs, and every handoff between them (a request to the handler pool and
back, a write to the group commit) then wakes a thread on another CPU. On a virtual machine that
wake-up is an interrupt between virtual CPUs: one pool round trip took 278 µs across two of them
and 37 µs on one (``bench/RESULTS.md``). Pinned, a worker's threads hand off on their own CPU.
The master spreads the workers over the CPUs it may use, fewest first, a new worker taking the
place of one that is gone (a reload's new workers share with the old ones until those leave).
Plain gunicorn does the same with ``--config python:host.serve.pinning``, which reads the two
hooks below by their gunicorn names.
"""

from __future__ import annotations

import os
from collections import Counter
from typing import Any

__all__ = ["choose_cpu", "pin_after_fork", "pin_before_fork", "post_fork", "pre_fork"]

_CPU = "host_cpu"


def choose_cpu(allowed: set[int], taken: list[int]) -> int:
    """The CPU of ``allowed`` with the fewest of ``taken`` on it (the lowest among equals)."""
    counts = Counter(cpu for cpu in taken if cpu in allowed)
    return min(sorted(allowed), key=lambda cpu: counts[cpu])


def pin_before_fork(arbiter: Any, worker: Any) -> None:
    """gunicorn's ``pre_fork`` (in the master): give the new worker its CPU."""
    taken = [getattr(other, _CPU, -1) for other in arbiter.WORKERS.values()]
    setattr(worker, _CPU, choose_cpu(os.sched_getaffinity(0), taken))


def pin_after_fork(arbiter: Any, worker: Any) -> None:
    """gunicorn's ``post_fork`` (in the worker, before its threads start): keep to that CPU."""
    cpu = getattr(worker, _CPU, None)
    if cpu is not None:
        os.sched_setaffinity(0, {cpu})
        worker.log.info("Worker %s pinned to CPU %s", worker.pid, cpu)


#: The hooks by gunicorn's names, for ``gunicorn --config python:host.serve.pinning``.
pre_fork = pin_before_fork
post_fork = pin_after_fork
