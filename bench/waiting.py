"""Open questions waiting for their answers: what holding them costs, how fast an answer comes.

A legacy client's question waits (in :meth:`host.store.Store.pop`) while a person reads and
answers it. For each store this opens ``--waiters`` waiting pops in one process (threads, as in a
worker with a large thread pool), then measures:

- CPU while waiting: this process's CPU seconds per wall second with every waiter waiting, and
  the same for the process idle (no waiters), over ``--seconds``;
- handover latency: from ``push`` (in another process, as another worker would) to the waiting
  ``pop`` returning, one answer at a time, for ``--handovers`` waiters (median, 95th, max);
- a burst: every remaining waiter answered at once, the time until the last one has its value.

It prints figures and asserts nothing. Run it as ``python bench/waiting.py`` (both stores; Redis
through a private redis-server on 127.0.0.1, or ``--redis-url``). To compare with another version
of the store, run it with that version first on ``PYTHONPATH``.
"""

from __future__ import annotations

import argparse
import multiprocessing
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from multiprocessing.connection import Connection
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from bench.servers import free_port  # noqa: E402
from host.store import Store, open_store  # noqa: E402

CTX = multiprocessing.get_context("fork")


def _pusher(url: str, conn: Connection) -> None:
    """Another worker: pushes the value for each key it is sent, and says when it pushed."""
    store = open_store(url)
    while True:
        key = conn.recv()
        if key is None:
            break
        if isinstance(key, list):
            for each in key:
                store.push(each, "answer", 60)
            conn.send(time.perf_counter())
            continue
        pushed = time.perf_counter()
        store.push(key, "answer", 60)
        conn.send(pushed)
    store.close()


def _cpu_per_second(seconds: float) -> float:
    cpu, wall = time.process_time(), time.monotonic()
    time.sleep(seconds)
    return (time.process_time() - cpu) / (time.monotonic() - wall)


def measure(url: str, waiters: int, seconds: float, handovers: int) -> dict[str, float]:
    """The figures for one store URL."""
    store: Store = open_store(url)
    run = f"bench-{time.time_ns()}"
    keys = [f"{run}-{n}" for n in range(waiters)]
    got: dict[str, float] = {}

    def wait(key: str) -> None:
        if store.pop(key, 600) is not None:
            got[key] = time.perf_counter()

    idle = _cpu_per_second(seconds)
    threads = [threading.Thread(target=wait, args=(key,), daemon=True) for key in keys]
    began = time.monotonic()
    for thread in threads:
        thread.start()
    time.sleep(max(1.0, waiters / 500))  # every waiter looks once, then settles down
    opened_s = time.monotonic() - began
    waiting = _cpu_per_second(seconds)

    ours, theirs = CTX.Pipe()
    pusher = CTX.Process(target=_pusher, args=(url, theirs), daemon=True)
    pusher.start()
    latencies: list[float] = []
    for key in keys[:handovers]:
        ours.send(key)
        pushed = ours.recv()
        deadline = time.monotonic() + 10
        while key not in got and time.monotonic() < deadline:
            time.sleep(0.0005)
        if key in got:
            latencies.append(got[key] - pushed)
    rest = keys[handovers:]
    ours.send(rest)
    burst_began = ours.recv()
    for thread in threads:
        thread.join(60)
    burst_end = max((got[key] for key in rest if key in got), default=burst_began)
    ours.send(None)
    pusher.join(10)
    store.close()
    latencies.sort()
    return {
        "waiters": waiters,
        "answered": len(got),
        "open_s": opened_s,
        "idle_cpu": idle,
        "waiting_cpu": waiting,
        "median_ms": 1000 * statistics.median(latencies) if latencies else float("nan"),
        "p95_ms": 1000 * latencies[int(0.95 * (len(latencies) - 1))] if latencies else float("nan"),
        "max_ms": 1000 * latencies[-1] if latencies else float("nan"),
        "burst": len(rest),
        "burst_ms": 1000 * (burst_end - burst_began),
    }


@contextmanager
def _redis_server() -> Iterator[str]:
    exe = shutil.which("redis-server")
    if exe is None:
        raise SystemExit("redis-server is not installed; pass --redis-url or --store sqlite")
    with tempfile.TemporaryDirectory() as folder:
        port = free_port()
        proc = subprocess.Popen(
            [exe, "--port", str(port), "--bind", "127.0.0.1", "--save", "",
             "--appendonly", "no", "--dir", folder],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        )  # fmt: skip
        try:
            url = f"redis://127.0.0.1:{port}/0"
            deadline = time.monotonic() + 10
            while True:
                try:
                    open_store(url).close()
                    break
                except Exception:
                    if time.monotonic() > deadline:
                        raise
                    time.sleep(0.05)
            yield url
        finally:
            proc.terminate()
            proc.wait(10)


def _report(name: str, figures: dict[str, float]) -> None:
    print(
        f"{name:<7} {figures['waiters']:>7.0f} {figures['answered']:>8.0f} "
        f"{figures['idle_cpu']:>9.3f} {figures['waiting_cpu']:>11.3f} "
        f"{figures['median_ms']:>9.2f} {figures['p95_ms']:>8.2f} {figures['max_ms']:>8.2f} "
        f"{figures['burst']:>6.0f} {figures['burst_ms']:>9.0f}"
    )


def main(argv: Sequence[str] | None = None) -> int:
    """Measure and print; returns the exit status."""
    parser = argparse.ArgumentParser(prog="bench/waiting.py", description=__doc__.split("\n")[0])
    parser.add_argument("--waiters", type=int, default=1000)
    parser.add_argument("--seconds", type=float, default=5.0, help="each CPU window")
    parser.add_argument("--handovers", type=int, default=200)
    parser.add_argument("--store", choices=("sqlite", "redis", "both"), default="both")
    parser.add_argument("--redis-url", help="an existing Redis (its db is written to)")
    args = parser.parse_args(argv)
    print(
        f"{args.waiters} waiting pops in one process; CPU = CPU seconds per wall second over "
        f"{args.seconds:g}s; latency = push in another process to pop returning"
    )
    print(
        f"{'store':<7} {'waiters':>7} {'answered':>8} {'idle CPU':>9} {'waiting CPU':>11} "
        f"{'median ms':>9} {'p95 ms':>8} {'max ms':>8} {'burst':>6} {'burst ms':>9}"
    )
    if args.store in ("sqlite", "both"):
        with tempfile.TemporaryDirectory() as folder:
            url = f"sqlite:///{Path(folder) / 'store.db'}"
            _report("sqlite", measure(url, args.waiters, args.seconds, args.handovers))
    if args.store in ("redis", "both"):
        if args.redis_url:
            _report("redis", measure(args.redis_url, args.waiters, args.seconds, args.handovers))
        else:
            with _redis_server() as url:
                _report("redis", measure(url, args.waiters, args.seconds, args.handovers))
    return 0


if __name__ == "__main__":
    sys.exit(main())
