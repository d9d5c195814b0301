"""Instructions per call served, counted by callgrind: one gunicorn worker, every thread of it.

``bench/instructions.py`` counts the host's app called in process. Served, gunicorn's own Python
(the request parsed, the environ and the response made), the worker's request pool and the
sockets' system calls run too, some 550k instructions a plain call that the in-process count
never sees; and a served comparison of two builds moves by a tenth between sets of rounds
(``bench/compare.py``: one pair read x0.885 in four rounds and x0.974 in six). This serves each
checkout under ``valgrind --tool=callgrind``, one call at a time on one connection, and counts the
worker's instructions over two runs of different lengths after the same warm-up: their difference
per call is the figure, start-up and warm-up cancelled out. The same build counts the same within
about 3% (the audit writer's batches follow the timing), whatever else the machine does.

Usage (each tree a checkout of the host, a ``git worktree`` of the commit to compare with, say)::

    .venv/bin/python -m bench.served_instructions . /tmp/before --kinds plain,exchange

NOTE: gunicorn's C parser decodes headers with an SSE4.2 string instruction valgrind does not
know (the worker would die of SIGILL), so the worker here runs gunicorn's Python parser, which
``bench/run.py`` prices apart (its ``C parser / Python parser`` rows). A count of user-space
instructions: the kernel's side of a thread switch, a send or an fsync is not in it, so a change
that saves switches (a handoff less) shows only in ``bench/compare.py``'s server CPU.
"""

from __future__ import annotations

import subprocess
import sys
import tempfile
import time
from pathlib import Path

from bench import loadgen, servers
from bench.instructions import callgrind_total, report
from bench.throughput import _ready, probe_exchange, probe_plain

__all__ = ["count", "main", "newest_dump", "per_call"]

#: The two runs' lengths by kind (calls after the warm-up): the figure is their difference.
RUNS = {"plain": (50, 300), "exchange": (10, 70)}
_WARM_UP = 60
_START_S = 600.0  # NOTE: a worker's start-up under valgrind takes a minute on a loaded machine


def count(tree: Path, kind: str, runs: tuple[int, int], scratch: Path) -> list[int]:
    """The worker's instructions over each of ``runs`` calls of ``kind``, served from ``tree``."""
    data, dumps = scratch / "data", scratch / "dumps"
    data.mkdir()
    dumps.mkdir()
    port = servers.free_port()
    cmd = [
        "valgrind", "--tool=callgrind", "--trace-children=yes",
        f"--callgrind-out-file={dumps}/cg.%p",
        *servers.gunicorn_cmd("host.web.wsgi:app", port, 1, parser="python"),
        "--chdir", str(tree), "--timeout", "900",
    ]  # fmt: skip
    env = servers.host_env(tree, data, "ab" * 32)
    servers.bytecode_under(env, scratch / "pyc")
    with servers.Server(f"{tree} ({kind})", cmd, port, env, None, scratch / "log", tree) as server:
        server.wait_ready(lambda: _answers(port), _START_S)
        servers.check_imported(scratch / "pyc", tree, server.name)
        work = probe_plain(port)[0] if kind == "plain" else probe_exchange(port)[0]
        loadgen.run_load(port, work, _WARM_UP, 1, _START_S)
        worker = servers.worker_pids(server.pid)[0]
        totals = []
        for calls in runs:
            _control("-z", worker)
            loadgen.run_load(port, work, calls, 1, _START_S)
            _control("-d", worker)
            totals.append(callgrind_total(newest_dump(dumps, worker).read_text()))
        return totals


def _answers(port: int) -> bool:
    """Whether the worker answers yet: under valgrind it accepts before it can serve."""
    try:
        return _ready(port)
    except (OSError, loadgen.LoadError):
        return False


def _control(flag: str, pid: int) -> None:
    """Zero (``-z``) or dump (``-d``) the counts of the callgrind process ``pid``."""
    subprocess.run(["callgrind_control", flag, str(pid)], check=True, capture_output=True)


def newest_dump(folder: Path, pid: int, wait_s: float = 30.0) -> Path:
    """The latest numbered dump of ``pid`` (``cg.<pid>.<n>``), waiting for it to be written."""
    deadline = time.monotonic() + wait_s
    while True:
        dumps = sorted(
            (p for p in folder.glob(f"cg.{pid}.*") if p.suffix[1:].isdigit()),
            key=lambda p: int(p.suffix[1:]),
        )
        if dumps and "totals:" in dumps[-1].read_text()[-4096:]:
            return dumps[-1]
        if time.monotonic() > deadline:
            raise RuntimeError(f"callgrind wrote no dump of process {pid} in {folder}")
        time.sleep(0.2)


def per_call(tree: Path, kind: str) -> float:
    """Instructions per call of ``kind`` served from ``tree``: the two runs' difference."""
    short, long = RUNS[kind]
    with tempfile.TemporaryDirectory(prefix="host-served-instructions-") as scratch:
        first, second = count(tree, kind, (short, long), Path(scratch))
    return (second - first) / (long - short)


def main(argv: list[str] | None = None) -> int:
    """Print instructions per call served for each tree and kind, and its ratio to the first."""
    return report(__doc__, argv, lambda tree, kind: [per_call(tree, kind)], " served")


if __name__ == "__main__":
    sys.exit(main())
