"""What ``host serve --pin-workers`` buys: a worker's handoffs on one CPU instead of across two.

Two figures, each a ratio measured in this run:

1. In-process, a handler-pool round trip (submit, run, result), with the process free to use
   every CPU and then kept on one. On a virtual machine a wake-up on another CPU is an interrupt
   between virtual CPUs.
2. Served, one ``host serve`` worker with ``--pin-workers`` against one without, the load
   generator kept on the last CPU both times, in interleaved rounds (best kept), plain calls and
   exchanges.

Run alone: ``python -m bench.pinning [ROUNDS]`` (about a minute per round). Needs two CPUs.
"""

from __future__ import annotations

import os
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from bench import loadgen, throughput
from bench.servers import ALL_CPUS, Server, free_port

__all__ = ["main", "round_trip_us", "served_rates"]

ROOT = Path(__file__).resolve().parent.parent


def round_trip_us(cpus: set[int], n: int = 5000) -> float:
    """µs per handler-pool round trip, this process kept on ``cpus``."""
    before = os.sched_getaffinity(0)
    os.sched_setaffinity(0, cpus)
    try:
        with ThreadPoolExecutor(4) as pool:
            for _ in range(500):
                pool.submit(int).result()
            start = time.perf_counter()
            for _ in range(n):
                pool.submit(int).result(timeout=10)
            return (time.perf_counter() - start) / n * 1e6
    finally:
        os.sched_setaffinity(0, before)


def served_rates(pinned: bool, work: Path, client_cpu: int) -> tuple[float, float]:
    """Plain calls/s and exchanges/s of one ``host serve`` worker, pinned or free."""
    port = free_port()
    data = work / f"{'pinned' if pinned else 'free'}-{port}"
    data.mkdir(parents=True)
    env = {
        **os.environ,
        "HOST_DATA_DIR": str(data),
        "HELPDESK_DB": str(data / "helpdesk.db"),
        "HOST_SECRET": "bench-pinning-" + "s" * 32,
    }
    cmd = [sys.executable, "-m", "host", "serve", "--specs", str(ROOT / "specs")]
    cmd += ["--bind", f"127.0.0.1:{port}", "--workers", "1"]
    cmd += ["--pin-workers"] if pinned else []
    with Server("host", cmd, port, env, None, data / "log") as server:
        server.wait_ready(lambda: _ready(port))
        os.sched_setaffinity(0, {client_cpu})
        try:
            plain, _ = throughput.probe_plain(port)
            exchange, _, _ = throughput.probe_exchange(port)
            loadgen.run_load(port, plain, 300)
            plain_rate = loadgen.run_load(port, plain, 3000).rate
            exchange_rate = loadgen.run_load(port, exchange, 1000).rate
        finally:
            os.sched_setaffinity(0, ALL_CPUS)
    return plain_rate, exchange_rate


def _ready(port: int) -> bool:
    status, _ = loadgen.request_once(port, b"GET /readyz HTTP/1.1\r\nHost: bench\r\n\r\n")
    return status == 200


def main(rounds: int = 3) -> int:
    """Print both comparisons; 1 when there are fewer than two CPUs to compare."""
    cpus = sorted(ALL_CPUS)
    if len(cpus) < 2:
        print("bench.pinning: needs two CPUs")
        return 1
    free_us, one_us = round_trip_us(set(cpus)), round_trip_us({cpus[0]})
    print(f"pool round trip: {free_us:.0f} µs free, {one_us:.0f} µs on one CPU", end="")
    print(f" ({free_us / one_us:.2f}x)")
    best = {True: (0.0, 0.0), False: (0.0, 0.0)}
    with tempfile.TemporaryDirectory(prefix="bench-pinning-") as work:
        for n in range(rounds):
            for pinned in (False, True):
                rates = served_rates(pinned, Path(work), cpus[-1])
                best[pinned] = (max(best[pinned][0], rates[0]), max(best[pinned][1], rates[1]))
                label = "pinned" if pinned else "free  "
                print(
                    f"round {n + 1} {label}: {rates[0]:,.0f} plain/s, {rates[1]:,.0f} exchanges/s"
                )
    (pp, px), (fp, fx) = best[True], best[False]
    ratios = f"plain {pp / fp:.2f}x, exchange {px / fx:.2f}x"
    print(f"one worker pinned / free (best of {rounds}): {ratios}")
    return 0


if __name__ == "__main__":
    sys.exit(main(int(sys.argv[1]) if len(sys.argv) > 1 else 3))
