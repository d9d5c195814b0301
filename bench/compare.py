"""Two or more builds of the host served side by side, in interleaved rounds: one change's figure.

``bench/run.py`` holds the host to its targets against baselines of the same run; this puts a
change beside the code before it. Each side is a git revision (checked out into a temporary
worktree), ``.`` (the working tree, uncommitted changes included), the folder of another checkout
(as it is on disk) or ``sdk`` (the SDK's fastest set-up). Every server is pinned to the same CPU
and the load generator to another, and each round measures every side in turn (the order reversed
every other round), so the machine's drift falls on all of them alike. Rounds still move by a
tenth: one pair read x0.885 in four rounds and x0.974 in six, so take six or more, and count a
change in instructions served too (:mod:`bench.served_instructions`)::

    python -m bench.compare HEAD~1 .                     # this change against the one before
    python -m bench.compare . . --rounds 8               # the harness's own spread: no change
    python -m bench.compare . sdk --kinds exchange
    python -m bench.compare . /tmp/experiment              # another checkout, edits and all

It prints, for each workload, each side's medians (calls/s, server CPU per operation, p50, p99)
and, against the first side, the median of the rounds' ratios of server CPU and of rate.

NOTE: a host is started in its own checkout, with gunicorn's ``--chdir`` and ``PYTHONPATH`` there
too. gunicorn puts the folder it starts in first on ``sys.path`` and imports ``host serve``'s
worker class from it before it reads ``--chdir``, so a side started from this checkout ran this
checkout's code whatever its ``--chdir`` said: earlier comparisons measured one tree against itself
that way. Each side writes its bytecode under a prefix of its own, and before any round the check
is that every ``host`` module it imported came from its own checkout.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import statistics
import subprocess
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from bench import loadgen, servers
from bench.throughput import Plan, _ready, _timed, probe_exchange, probe_plain

__all__ = ["Round", "Side", "in_order", "main", "summary"]

KINDS = ("plain", "exchange")


@dataclass
class Round:
    """One timed run of one side: calls/s, server CPU µs per operation, p50 and p99 in ms."""

    rate: float
    cpu_us: float
    p50_ms: float
    p99_ms: float


@dataclass
class Side:
    """One build under comparison, and its rounds by workload."""

    label: str
    root: Path | None  # NOTE: None for the SDK, which runs from this checkout
    rounds: dict[str, list[Round]] = field(default_factory=dict)


@dataclass
class _Live:
    side: Side
    server: servers.Server
    work: dict[str, loadgen.Plain | loadgen.Exchange]
    bytecode: Path


def summary(sides: list[Side], kind: str) -> list[str]:
    """The report's lines for ``kind``: each side's medians, and its ratios to the first's."""
    base = sides[0].rounds.get(kind, [])
    lines = [f"== {kind}"]
    for side in sides:
        rounds = side.rounds.get(kind, [])
        if not rounds:
            continue
        cpu = [r.cpu_us / b.cpu_us for r, b in zip(rounds, base, strict=False) if b.cpu_us]
        rate = [r.rate / b.rate for r, b in zip(rounds, base, strict=False) if b.rate]
        lines.append(
            f"{side.label:16} {statistics.median(r.rate for r in rounds):8,.0f}/s"
            f"  CPU {statistics.median(r.cpu_us for r in rounds):6,.0f} µs/op"
            f"  p50 {statistics.median(r.p50_ms for r in rounds):5.1f}"
            f"  p99 {statistics.median(r.p99_ms for r in rounds):5.1f} ms"
            f"  CPU x{statistics.median(cpu) if cpu else 0:.3f}"
            f"  rate x{statistics.median(rate) if rate else 0:.3f}"
            f"  (CPU by round: {', '.join(f'{r.cpu_us:.0f}' for r in rounds)})"
        )
    return lines


def _sides(names: list[str], work: Path, stack: contextlib.ExitStack) -> Iterator[Side]:
    """The sides named, each revision checked out (and removed again when ``stack`` closes)."""
    for n, name in enumerate(names):
        label = f"{n + 1}:{name}"
        if name == "sdk":
            yield Side(label, None)
        elif name == ".":
            yield Side(label, servers.ROOT)
        elif Path(name).is_dir():
            yield Side(label, Path(name).resolve())  # NOTE: another checkout, as it is on disk
        else:
            tree = work / f"tree-{n + 1}"
            _git("worktree", "add", "--detach", str(tree), name)
            stack.callback(_git, "worktree", "remove", "--force", str(tree))
            yield Side(label, tree)


def _git(*args: str) -> None:
    done = subprocess.run(
        ["git", *args], cwd=servers.ROOT, capture_output=True, text=True, check=False
    )
    if done.returncode != 0:
        raise SystemExit(f"git {' '.join(args)}: {done.stderr.strip()}")


def _start(side: Side, n: int, work: Path, secret: str, cpus: frozenset[int] | None) -> _Live:
    data = work / f"data-{n}"
    data.mkdir()
    port = servers.free_port()
    if side.root is None:
        env = {k: v for k, v in os.environ.items() if not k.startswith(("HOST_", "SDK_BENCH_"))}
        env.update(
            SDK_BENCH_CONFIG="fastest",
            SDK_BENCH_SECRET=secret,
            SDK_BENCH_HANDLERS=str(servers.ROOT / "handlers"),
            HELPDESK_DB=str(data / "helpdesk.db"),
        )
        cmd = servers.uvicorn_cmd("bench.sdk_server:app", port)
    else:
        env = servers.host_env(side.root, data, secret)
        cmd = [*servers.gunicorn_cmd("host.web.wsgi:app", port, 1), "--chdir", str(side.root)]
    servers.bytecode_under(env, work / f"pyc-{n}")
    cwd = side.root or servers.ROOT
    server = servers.Server(side.label, cmd, port, env, cpus, work / f"server-{n}.log", cwd)
    return _Live(side, server, {}, work / f"pyc-{n}")


def _ready_as_built(live: _Live) -> None:
    """Wait until it answers; check that it runs its own checkout's code; probe both workloads."""
    port = live.server.port
    live.server.wait_ready(lambda: _ready(port), 60)
    if live.side.root is not None:
        servers.check_imported(live.bytecode, live.side.root, live.side.label)
    live.work["plain"] = probe_plain(port)[0]
    live.work["exchange"] = probe_exchange(port)[0]


def _measure(lives: list[_Live], kinds: list[str], plan: Plan) -> None:
    ops = {"plain": plan.calls, "exchange": plan.exchanges}
    for kind in kinds:
        for number in range(plan.rounds):
            for live in lives if number % 2 == 0 else lives[::-1]:
                server = live.server
                timed = _timed(server.port, server.pid, live.work[kind], ops[kind], plan)
                server.check_alive()
                result = timed.result
                live.side.rounds.setdefault(kind, []).append(
                    Round(result.rate, timed.server_cpu_us, result.p(50), result.p(99))
                )


def in_order(text: str) -> list[str]:
    """The workloads ``--kinds`` names, plain calls first however written; [] for a stranger.

    NOTE: each exchange adds to the example's outbox, which ``list_outbox`` returns whole: plain
    rounds measured after 16,000 exchanges ran at 53 calls/s.
    """
    asked = {k for k in text.split(",") if k}
    return [k for k in KINDS if k in asked] if asked <= set(KINDS) else []


def main(argv: list[str] | None = None) -> None:
    """Serve every side, run the rounds, print the summary."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "sides", nargs="+", help="git revisions, '.' or 'sdk'; the first is the base"
    )
    parser.add_argument("--rounds", type=int, default=6, help="timed rounds per side (6)")
    parser.add_argument("--calls", type=int, default=3000, help="plain calls per round (3000)")
    parser.add_argument("--exchanges", type=int, default=800, help="exchanges per round (800)")
    parser.add_argument("--kinds", default="plain,exchange", help="plain, exchange or both")
    args = parser.parse_args(argv)
    kinds = in_order(args.kinds)
    if not kinds or len(args.sides) < 2:
        parser.error("give at least two sides, and --kinds among plain and exchange")
    cpus = sorted(servers.ALL_CPUS)
    server_cpus = frozenset(cpus[:1]) if len(cpus) >= 2 else None
    with (
        tempfile.TemporaryDirectory(prefix="host-compare-") as tmp,
        contextlib.ExitStack() as stack,
    ):
        work, secret = Path(tmp), os.urandom(32).hex()
        sides = list(_sides(args.sides, work, stack))
        lives = [_start(side, n, work, secret, server_cpus) for n, side in enumerate(sides)]
        for live in lives:
            stack.enter_context(live.server)
            _ready_as_built(live)
        if server_cpus is not None:
            os.sched_setaffinity(0, frozenset(cpus[1:2]))
        warmup = min(300, args.calls, args.exchanges)
        plan = Plan(args.calls, args.exchanges, warmup, args.rounds, timeout=120.0)
        _measure(lives, kinds, plan)
    for kind in kinds:
        print("\n".join(summary(sides, kind)))


if __name__ == "__main__":
    main()
