"""Run every benchmark of the host and print one table of ratios, then the raw figures.

Usage::

    .venv/bin/python bench/run.py            # the full run, about 10 minutes
    .venv/bin/python bench/run.py --quick    # a smoke run with a few calls (about half a minute)
    .venv/bin/python bench/run.py --json out.json --sections throughput,scale
    .venv/bin/python bench/run.py --sections throughput --servers host,sdk-fastest,ceiling

Each ratio is taken against a baseline measured in the same run, on the same machine:

- the official MCP Python SDK (``bench/sdk_server.py`` under uvicorn, one process) serving the
  same two tools over the same SQLite handlers, in its fastest configuration (JSON responses,
  stateless) and its default one;
- the ceiling: a bare Falcon endpoint under the host's gunicorn settings that only parses the
  JSON-RPC body and answers a same-sized result (``bench/ceiling.py``);
- the instructions the performance issue's base revision runs per call (``bench/counted.py``).

With two or more CPUs the server under test is pinned to the first and the load generator
(``bench/loadgen.py``, raw keep-alive sockets, 16 connections) to the second; the host with two
workers, unpinned, is reported as a deployment figure. Targets are printed as PASS or MISS; they
are never asserted by the test suite. Everything listens on 127.0.0.1, every run is bounded in
calls and time, and every server is killed on every way out.
"""

from __future__ import annotations

import argparse
import atexit
import importlib.util
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import asdict, replace
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from bench import counted, scale, servers  # noqa: E402
from bench.ceiling import DEFAULT_SIZES  # noqa: E402
from bench.prices import STUBBED  # noqa: E402
from bench.report import Check  # noqa: E402
from bench.throughput import Plan, Spec, TargetRun, run_all  # noqa: E402

__all__ = ["FULL", "QUICK", "SERVERS", "main"]

FULL = Plan(calls=6_000, exchanges=2_000, warmup=300, rounds=3)
QUICK = Plan(calls=200, exchanges=60, warmup=30, rounds=1, timeout=30.0)
SECTIONS = ("throughput", "machinery", "scale", "instructions")
#: Every server the throughput section can measure, by label (``--servers`` picks some); the
#: Python parser's runs are there only when gunicorn's C parser is installed.
SERVERS = (
    "sdk-fastest",
    "sdk-default",
    "sdk-fastest-resolver",
    "host",
    "host-2-workers-unpinned",
    "host-2-workers-pin-workers",
    "host-python-parser",
    STUBBED,
    "ceiling",
    "ceiling-python-parser",
)
# NOTE: with gunicorn's C parser installed, the host and the ceiling are also run on the Python
# one, so one run says what the parser is worth to each.
FAST_PARSER = importlib.util.find_spec("gunicorn_h1c") is not None
_MACHINERY = """
import json, sys
sys.path.insert(0, {root!r})
from bench.machinery import measure
print(json.dumps(measure({n})))
"""


def _host_missing() -> str | None:
    """Why the host cannot be measured yet, or None when it can."""
    if importlib.util.find_spec("host.web.wsgi") is None:
        return "host.web.wsgi does not exist yet"
    return None


class Bench:
    """One benchmark run: its settings, scratch directory and results."""

    def __init__(self, args: argparse.Namespace) -> None:
        self.quick: bool = args.quick
        self.plan = QUICK if args.quick else FULL
        if args.calls or args.exchanges or args.rounds:
            self.plan = replace(
                self.plan,
                calls=args.calls or self.plan.calls,
                exchanges=args.exchanges or self.plan.exchanges,
                rounds=args.rounds or self.plan.rounds,
            )
        self.sections: list[str] = args.sections
        self.servers: list[str] = args.servers
        self.handlers = Path(args.handlers).resolve()
        self.work = Path(tempfile.mkdtemp(prefix="host-bench-"))
        self.keep = args.keep
        cpus = sorted(servers.ALL_CPUS)
        self.pinned = len(cpus) >= 2
        self.server_cpus = frozenset(cpus[:1]) if self.pinned else None
        self.client_cpus = frozenset(cpus[1:2]) if self.pinned else servers.ALL_CPUS
        self.secret = os.urandom(32).hex()
        self.host_missing = _host_missing()
        self.runs: dict[str, TargetRun] = {}
        self.notes: list[str] = []
        self.machinery: dict[str, Any] | None = None
        self.machinery_error: str | None = None
        self.scale_runs: list[scale.ScaleRun] = []
        self.validate: dict[str, Any] | None = None
        self.validate_error: str | None = None
        self.instructions: dict[str, Any] | None = None
        self.instructions_error: str | None = None
        self.errors: list[str] = []

    # -- environments ------------------------------------------------------------------------

    def _base_env(self) -> dict[str, str]:
        env = {k: v for k, v in os.environ.items() if not k.startswith(("HOST_", "SDK_BENCH_"))}
        env["PYTHONDONTWRITEBYTECODE"] = "1"
        return env

    def host_env(self, label: str) -> dict[str, str]:
        """A fresh data directory and database for one host server."""
        data = self.work / label
        data.mkdir(parents=True, exist_ok=True)
        return {
            **self._base_env(),
            "HOST_SPECS": str(ROOT / "specs"),
            "HOST_HANDLERS": str(self.handlers),
            "HOST_SECRET": self.secret,
            "HOST_DATA_DIR": str(data),
            "HOST_STORE": f"sqlite:///{data / 'store.db'}",
            "HELPDESK_DB": str(data / "helpdesk.db"),
        }

    def sdk_env(self, label: str, config: str, elicit: str) -> dict[str, str]:
        """A fresh database for one SDK server."""
        data = self.work / label
        data.mkdir(parents=True, exist_ok=True)
        return {
            **self._base_env(),
            "SDK_BENCH_CONFIG": config,
            "SDK_BENCH_ELICIT": elicit,
            "SDK_BENCH_SECRET": self.secret,
            "SDK_BENCH_HANDLERS": str(self.handlers),
            "HELPDESK_DB": str(data / "helpdesk.db"),
        }

    # -- section 1 ---------------------------------------------------------------------------

    def throughput(self) -> None:
        """SDK (two configurations, two ways to ask), host, ceiling, host with two workers."""
        sdk = "bench.sdk_server:app"
        specs: list[Spec] = []
        for label, config, elicit in (
            ("sdk-fastest", "fastest", "manual"),
            ("sdk-default", "default", "manual"),
            ("sdk-fastest-resolver", "fastest", "resolver"),
        ):
            port = servers.free_port()
            env = self.sdk_env(label, config, elicit)
            specs.append(Spec(label, servers.uvicorn_cmd(sdk, port), port, env, True))
        if self.host_missing:
            self.notes.append(f"host not measured: {self.host_missing}")
        else:
            hosts = [
                ("host", 1, True, "auto"),
                ("host-2-workers-unpinned", 2, False, "auto"),
                # NOTE: as `host serve --pin-workers`: each worker on a CPU of its own.
                ("host-2-workers-pin-workers", 2, False, "auto"),
            ]
            if FAST_PARSER:
                hosts.append(("host-python-parser", 1, True, "python"))
            # NOTE: measurement only: what the guarantees cost served (bench/stubbed.py).
            hosts.append((STUBBED, 1, True, "auto"))
            for label, workers, pinned, parser in hosts:
                port = servers.free_port()
                app = "bench.stubbed:app" if label == STUBBED else "host.web.wsgi:app"
                cmd = servers.gunicorn_cmd(app, port, workers, parser=parser)
                if label.endswith("-pin-workers"):
                    cmd += ["--config", "python:host.serve.pinning"]
                specs.append(Spec(label, cmd, port, self.host_env(label), pinned))
        if not FAST_PARSER:
            self.notes.append("gunicorn_h1c is not installed: every gunicorn parses in Python")

        def say(text: str) -> None:
            print(f"  {text}", file=sys.stderr, flush=True)

        self.runs = run_all(
            [spec for spec in specs if self.wanted(spec.label)],
            self.plan,
            self.server_cpus,
            self.client_cpus,
            self.work,
            self._ceilings,
            say,
        )
        for label, run in self.runs.items():
            if run.error:
                self.errors.append(f"{label}: {run.error}")

    def _ceilings(self, runs: dict[str, TargetRun]) -> list[Spec]:
        """The ceilings, their answers sized like the host's (else the SDK's) in this run."""
        source = next(
            (runs[k] for k in ("host", "sdk-fastest") if k in runs and not runs[k].error),
            None,
        )
        sizes = source.sizes if source else DEFAULT_SIZES
        self.notes.append(
            f"ceiling answers sized like {source.label if source else 'defaults'}: {sizes}"
        )
        env = {**self._base_env(), "CEILING_SIZES": ",".join(map(str, sizes))}
        made = []
        for label, parser in [("ceiling", "auto")] + (
            [("ceiling-python-parser", "python")] if FAST_PARSER else []
        ):
            if not self.wanted(label):
                continue
            port = servers.free_port()
            cmd = servers.gunicorn_cmd("bench.ceiling:app", port, 1, parser=parser)
            made.append(Spec(label, cmd, port, env, True))
        return made

    def wanted(self, label: str) -> bool:
        """Whether the server ``label`` is measured (``--servers``: only those named)."""
        return not self.servers or label in self.servers

    # -- section 2 ---------------------------------------------------------------------------

    def machinery_section(self) -> None:
        """The host's own per-call cost, from a profile of the hot path (``bench/machinery.py``)."""
        if self.host_missing:
            self.machinery_error = self.host_missing
            return
        if not (ROOT / "bench" / "machinery.py").exists():
            self.machinery_error = "bench/machinery.py is not there yet"
            return
        n = 200 if self.quick else 2000
        code = _MACHINERY.format(root=str(ROOT), n=n)
        env = self.host_env("machinery")
        cpus = self.server_cpus
        errors = self.work / "machinery.log"
        try:
            with errors.open("w") as err:
                done = subprocess.run(
                    [sys.executable, "-c", code],
                    cwd=ROOT,
                    env=env,
                    stdout=subprocess.PIPE,
                    stderr=err,
                    text=True,
                    timeout=300,
                    check=False,
                    preexec_fn=None if cpus is None else (lambda: os.sched_setaffinity(0, cpus)),
                )
        except subprocess.TimeoutExpired:
            self.machinery_error = "timed out after 300 s"
            self.errors.append(f"machinery: {self.machinery_error}")
            return
        lines = [ln for ln in done.stdout.splitlines() if ln.startswith("{")]
        if done.returncode != 0 or not lines:
            log = errors.read_text(errors="replace").strip().splitlines()
            tail = "\n".join([ln for ln in log if not ln.startswith("{")][-5:])
            self.machinery_error = f"exit {done.returncode}: {tail}"
            self.errors.append(f"machinery: {self.machinery_error}")
            return
        self.machinery = json.loads(lines[-1])

    # -- section 3 ---------------------------------------------------------------------------

    def scale_section(self) -> None:
        """Start-up, memory and tools/list by number of tools; validate time."""
        sizes = (10, 100) if self.quick else (10, 100, 1000)
        os.sched_setaffinity(0, self.client_cpus)
        validate_n = 100 if self.quick else 1000
        # NOTE: a smoke run takes one fresh process per figure, a full run the fastest of three.
        runs = 1 if self.quick else scale.REPEATS
        self.validate, self.validate_error = scale.measure_validate(
            validate_n, self.host_env("validate"), self.server_cpus, runs
        )
        if self.validate_error and "not there yet" not in self.validate_error:
            self.errors.append(f"validate: {self.validate_error}")
        if self.host_missing:
            self.notes.append(f"scale not measured: {self.host_missing}")
            os.sched_setaffinity(0, servers.ALL_CPUS)
            return
        for n in sizes:
            print(f"  scale {n} tools ...", file=sys.stderr, flush=True)
            env = self.host_env(f"scale-{n}")
            repeats = (3 if self.quick else 20) if n == sizes[-1] else 0
            run = scale.measure_size(n, self.work, env, self.server_cpus, repeats, runs)
            if run.error:
                self.errors.append(f"scale {n}: {run.error}")
            self.scale_runs.append(run)
        os.sched_setaffinity(0, servers.ALL_CPUS)

    # -- the report ----------------------------------------------------------------------------

    def checks(self) -> list[Check]:
        """The ratio table: every ratio against a baseline from this run, with its target."""
        from bench.verdicts import build_checks

        return build_checks(self)

    def cleanup(self) -> None:
        """Remove the scratch directory unless asked to keep it."""
        if self.keep:
            print(f"scratch files kept in {self.work}", file=sys.stderr)
        else:
            shutil.rmtree(self.work, ignore_errors=True)


def _bind_port(cmd: Sequence[str]) -> int:
    return int(cmd[cmd.index("--bind") + 1].rsplit(":", 1)[1])


def _names(text: str) -> list[str]:
    """A comma-separated list's names, blanks dropped (``--sections``, ``--servers``)."""
    return [name.strip() for name in text.split(",") if name.strip()]


def _parse(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="bench/run.py", description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="smoke run: a few calls per server")
    parser.add_argument("--calls", type=int, default=0, help="plain calls per timed run")
    parser.add_argument("--exchanges", type=int, default=0, help="exchanges per timed run")
    parser.add_argument("--rounds", type=int, default=0, help="timed runs per server (best kept)")
    parser.add_argument(
        "--sections",
        type=_names,
        default=None,
        help=f"comma-separated subset of {','.join(SECTIONS)} (--quick: all but instructions)",
    )
    parser.add_argument(
        "--servers",
        type=_names,
        default=[],
        help=f"measure only these servers (comma-separated; default: all of {','.join(SERVERS)})",
    )
    parser.add_argument(
        "--handlers",
        default=str(ROOT / "handlers"),
        help="handlers directory both servers use (default: the example's handlers/)",
    )
    parser.add_argument("--json", help="also write every raw figure to this JSON file")
    parser.add_argument("--keep", action="store_true", help="keep the scratch directory and logs")
    args = parser.parse_args(argv)
    if args.sections is None:
        args.sections = [s for s in SECTIONS if not (args.quick and s == "instructions")]
    unknown = [s for s in args.sections if s not in SECTIONS]
    if unknown:
        parser.error(f"unknown section(s) {unknown}; choose from {', '.join(SECTIONS)}")
    strangers = [s for s in args.servers if s not in SERVERS]
    if strangers:
        parser.error(f"unknown server(s) {strangers}; choose from {', '.join(SERVERS)}")
    return args


def _on_term(signum: int, frame: object) -> None:
    raise SystemExit(128 + signum)


def main(argv: Sequence[str] | None = None) -> int:
    """Run the benchmarks; 0 when every part that could run ran, 1 otherwise."""
    args = _parse(argv)
    atexit.register(servers.kill_all)
    signal.signal(signal.SIGTERM, _on_term)
    bench = Bench(args)
    started = time.perf_counter()
    try:
        if "throughput" in bench.sections:
            print("throughput and latency:", file=sys.stderr)
            bench.throughput()
        if "machinery" in bench.sections:
            print("host machinery profile ...", file=sys.stderr)
            bench.machinery_section()
        if "scale" in bench.sections:
            print("scale with the number of tools:", file=sys.stderr)
            bench.scale_section()
        if "instructions" in bench.sections:
            print("instructions per call, under callgrind (some five minutes) ...", file=sys.stderr)
            bench.instructions, bench.instructions_error = counted.measure(bench.work)
    finally:
        servers.kill_all()
    from bench.verdicts import render

    print(render(bench, time.perf_counter() - started))
    if args.json:
        Path(args.json).write_text(json.dumps(_raw(bench), indent=2, default=str))
    bench.cleanup()
    return 1 if bench.errors else 0


def _raw(bench: Bench) -> dict[str, Any]:
    runs: dict[str, Any] = {}
    for label, run in bench.runs.items():
        item: dict[str, Any] = {"error": run.error, "port": run.port, "ready_s": run.ready_s}
        item["sizes"] = run.sizes
        item["rss_mb"] = run.rss_mb
        for kind in ("plain", "exchange"):
            item[kind] = []
            for measured in getattr(run, f"{kind}_runs"):
                r = measured.result
                item[kind].append(
                    {
                        "operations": r.operations,
                        "requests": r.requests,
                        "seconds": r.seconds,
                        "rate": r.rate,
                        "p50_ms": r.p(50),
                        "p99_ms": r.p(99),
                        "errors": r.errors,
                        "first_error": r.first_error,
                        "server_cpu_us": measured.server_cpu_us,
                        "client_cpu_us": r.client_cpu_us,
                    }
                )
        runs[label] = item
    return {
        "plan": asdict(bench.plan),
        "pinned": bench.pinned,
        "runs": runs,
        "machinery": bench.machinery,
        "machinery_error": bench.machinery_error,
        "scale": [asdict(r) for r in bench.scale_runs],
        "validate": bench.validate,
        "validate_error": bench.validate_error,
        "instructions": bench.instructions,
        "instructions_error": bench.instructions_error,
        "checks": [asdict(c) for c in bench.checks()],
        "notes": bench.notes,
        "errors": bench.errors,
    }


if __name__ == "__main__":
    sys.exit(main())
