"""Many people answering at once: 1,000 legacy questions held open on one machine.

For each worker model, in one run, this starts the help desk on 127.0.0.1 and opens
``--questions`` legacy questions at once (a 2025-11-25 client each: ``initialize``, then a
``close_ticket`` call whose event stream carries the question and stays open, as while a person
reads it). With every question open it measures:

- **held**: how many questions reached their clients;
- **CPU while waiting**: the server's CPU seconds (master and workers) per wall second, over
  ``--seconds`` with every question open and nothing else happening;
- **other calls**: the latency (median, p99) of ``--calls`` read-only calls from other clients
  (new connections, 4 at a time) while the questions stay open, beside the same before any
  question was opened, and how many failed;
- **memory**: each worker's resident memory before and with the questions open;

then answers every question (a separate POST each) and counts the calls that completed on their
streams, and the help desk's emails (each completed call acted exactly once).

Models (``--models``, comma-separated; default ``default,gevent``):

- ``default``: ``host serve`` with its default settings;
- ``threads-8``: ``host serve --threads 8``, the set-up before (2 workers x 8 threads);
- ``gevent``: plain gunicorn with ``host serve``'s settings (``host serve --dry-run``) but
  ``--worker-class gevent`` (needs ``pip install gevent``, in the ``bench`` extra): each waiting
  question costs a greenlet instead of a thread.

It prints figures and asserts nothing. Run it as ``python bench/questions.py``; ``--quick``
opens 100 questions with short windows.
"""

from __future__ import annotations

import argparse
import asyncio
import importlib.util
import json
import os
import signal
import sqlite3
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from bench.crowd import Crowd, latencies, median, percentile  # noqa: E402
from bench.servers import free_port  # noqa: E402
from host.serve.start import ServeOptions, gunicorn_argv, worker_env  # noqa: E402

#: Each model: ``host serve`` options, or None for plain gunicorn with gevent workers.
MODELS: dict[str, list[str] | None] = {
    "default": [],
    "threads-8": ["--threads", "8"],
    "gevent": None,
}
_TICK = os.sysconf("SC_CLK_TCK")


@dataclass
class Server:
    """A running ``host serve`` and where to find it."""

    port: int
    proc: subprocess.Popen[bytes]
    data: Path
    log: Path

    def problems(self) -> list[str]:
        """The server's log lines at ERROR level or above, and any traceback's last line."""
        found = []
        for raw in self.log.read_text(errors="replace").splitlines():
            if raw.startswith("{"):
                try:
                    line = json.loads(raw)
                except ValueError:
                    continue
                if line.get("level") in ("error", "critical"):
                    found.append(raw[:2000])
        return found

    def pids(self) -> list[int]:
        """The master and its workers."""
        children = Path(f"/proc/{self.proc.pid}/task/{self.proc.pid}/children")
        try:
            found = [int(p) for p in children.read_text().split()]
        except OSError:
            found = []
        return [self.proc.pid, *found]

    def workers(self) -> list[int]:
        """The worker processes."""
        return self.pids()[1:]

    def cpu_s(self) -> float:
        """CPU seconds used so far by the master and its current workers."""
        total = 0
        for pid in self.pids():
            try:
                fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue
            total += int(fields[11]) + int(fields[12])  # utime, stime
        return total / _TICK

    def rss_mb(self) -> list[float]:
        """Each worker's resident memory, in MB."""
        sizes = []
        for pid in self.workers():
            try:
                for line in Path(f"/proc/{pid}/status").read_text().splitlines():
                    if line.startswith("VmRSS:"):
                        sizes.append(int(line.split()[1]) / 1024)
            except OSError:
                continue
        return sizes

    def threads(self) -> int:
        """Threads across the workers."""
        count = 0
        for pid in self.workers():
            try:
                count += len(os.listdir(f"/proc/{pid}/task"))
            except OSError:
                continue
        return count

    def emails(self) -> int:
        """Emails in the help desk's outbox: one per close_ticket act."""
        with sqlite3.connect(self.data / "helpdesk.db") as db:
            return int(db.execute("SELECT count(*) FROM outbox").fetchone()[0])


def _gevent_argv(port: int, env: dict[str, str]) -> list[str]:
    """Plain gunicorn serving as ``host serve`` does, but with gevent workers; sets ``env``."""
    options = ServeOptions(specs=ROOT / "specs", bind=f"127.0.0.1:{port}")
    env.update(worker_env(options, env))
    argv = gunicorn_argv(options)
    argv[argv.index("--worker-class") + 1] = "gevent"
    return argv


@contextmanager
def serving(args: Sequence[str] | None, folder: Path) -> Iterator[Server]:
    """``host serve`` of the help desk with ``args`` (None: gevent), until the block ends."""
    port = free_port()
    data = folder / "data"
    env = {k: v for k, v in os.environ.items() if not k.startswith(("HOST_", "HELPDESK_"))}
    env.update(HOST_DATA_DIR=str(data), HOST_SECRET="b" * 40, HOST_LOG_LEVEL="WARNING")
    if args is None:
        argv = _gevent_argv(port, env)
    else:
        argv = [sys.executable, "-m", "host", "serve", "--specs", str(ROOT / "specs")]
        argv += ["--bind", f"127.0.0.1:{port}", *args]
    log = (folder / "server.log").open("wb")
    proc = subprocess.Popen(
        argv, env=env, cwd=folder, stdout=log, stderr=subprocess.STDOUT
    )  # fmt: skip
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/readyz", timeout=2):
                    break
            except OSError:
                if proc.poll() is not None or time.monotonic() > deadline:
                    raise SystemExit(
                        f"{' '.join(argv)} did not start:\n" + (folder / "server.log").read_text()
                    ) from None
                time.sleep(0.1)
        yield Server(port, proc, data, folder / "server.log")
    finally:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        log.close()


async def _cpu_per_second(server: Server, seconds: float) -> float:
    cpu, wall = server.cpu_s(), time.monotonic()
    await asyncio.sleep(seconds)
    return (server.cpu_s() - cpu) / (time.monotonic() - wall)


async def measure(server: Server, questions: int, seconds: float, calls: int) -> dict[str, Any]:
    """The figures for one running server."""
    figures: dict[str, Any] = {}
    await latencies(server.port, 200)  # warm up every worker
    before, _ = await latencies(server.port, calls)
    figures["rss_before"] = server.rss_mb()
    figures["idle_cpu"] = await _cpu_per_second(server, seconds)
    crowd = Crowd(server.port, questions)
    began = time.monotonic()
    figures["held"] = await crowd.open(timeout_s=max(60.0, questions / 10))
    figures["open_s"] = time.monotonic() - began
    figures["threads"] = server.threads()
    await asyncio.sleep(1.0)
    figures["waiting_cpu"] = await _cpu_per_second(server, seconds)
    figures["rss_held"] = server.rss_mb()
    during, failed = await latencies(server.port, calls)
    figures["still_held"] = crowd.held()
    began = time.monotonic()
    figures["completed"] = await crowd.answer(timeout_s=max(120.0, questions / 5))
    figures["answer_s"] = time.monotonic() - began
    figures["emails"] = server.emails()
    figures["errors"] = crowd.errors() + server.problems()
    crowd.close()
    figures["before_ms"] = (1000 * median(before), 1000 * percentile(before, 0.99))
    figures["during_ms"] = (1000 * median(during), 1000 * percentile(during, 0.99))
    figures["failed"] = failed
    return figures


def report(name: str, questions: int, figures: dict[str, Any]) -> None:
    """Print one model's figures."""
    before, during = figures["before_ms"], figures["during_ms"]
    rss_before = "/".join(f"{v:.0f}" for v in figures["rss_before"])
    rss_held = "/".join(f"{v:.0f}" for v in figures["rss_held"])
    per_question = (
        (sum(figures["rss_held"]) - sum(figures["rss_before"])) * 1024 / max(figures["held"], 1)
    )
    print(
        f"{name:<10} {figures['held']:>5}/{questions:<5} {figures['open_s']:>6.1f} "
        f"{figures['threads']:>7} {figures['idle_cpu']:>8.3f} {figures['waiting_cpu']:>8.3f} "
        f"{before[0]:>7.1f} {before[1]:>7.1f} {during[0]:>7.1f} {during[1]:>7.1f} "
        f"{figures['failed']:>6} {rss_before:>9} {rss_held:>9} {per_question:>6.0f} "
        f"{figures['completed']:>5}/{figures['held']:<5} {figures['answer_s']:>6.1f} "
        f"{figures['emails']:>6}"
    )
    for line in figures["errors"][:5]:
        print(f"{'':<10} error: {line}")


def main(argv: Sequence[str] | None = None) -> int:
    """Measure each model and print a table; returns the exit status."""
    parser = argparse.ArgumentParser(prog="bench/questions.py", description=__doc__.split("\n")[0])
    parser.add_argument("--questions", type=int, default=1000)
    parser.add_argument("--seconds", type=float, default=10.0, help="each CPU window")
    parser.add_argument("--calls", type=int, default=300, help="other calls timed")
    parser.add_argument("--models", default="default,gevent")
    parser.add_argument("--rounds", type=int, default=1, help="runs of every model, interleaved")
    parser.add_argument("--quick", action="store_true", help="100 questions, short windows")
    args = parser.parse_args(argv)
    if args.quick:
        args.questions, args.seconds, args.calls = 100, 2.0, 50
    models = [m.strip() for m in args.models.split(",") if m.strip()]
    unknown = [m for m in models if m not in MODELS]
    if unknown:
        parser.error(f"unknown model(s) {', '.join(unknown)}; choose from {', '.join(MODELS)}")
    print(
        f"{args.questions} legacy questions opened at once against the help desk on 127.0.0.1; "
        f"CPU = server CPU s per wall s over {args.seconds:g}s; other calls = {args.calls} "
        "list_outbox calls, new connections, 4 at a time; RSS per worker in MB; per q = KB of "
        "worker RSS per held question"
    )
    print(
        f"{'model':<10} {'held':>11} {'open s':>6} {'threads':>7} {'idle CPU':>8} {'wait CPU':>8} "
        f"{'p50 ms':>7} {'p99 ms':>7} {'held p50':>7} {'p99':>7} {'failed':>6} "
        f"{'RSS idle':>9} {'RSS held':>9} {'per q':>6} {'completed':>11} {'ans s':>6} "
        f"{'emails':>6}"
    )
    for name in [m for _ in range(args.rounds) for m in models]:
        if MODELS[name] is None and importlib.util.find_spec("gevent") is None:
            print(f"{name:<10} skipped: gevent is not installed (pip install -e '.[bench]')")
            continue
        with tempfile.TemporaryDirectory() as folder, serving(MODELS[name], Path(folder)) as server:
            figures = asyncio.run(measure(server, args.questions, args.seconds, args.calls))
            report(name, args.questions, figures)
    return 0


if __name__ == "__main__":
    sys.exit(main())
