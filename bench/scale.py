"""Section 3: how the host scales with the number of tools.

For each size: generate a spec directory (:mod:`bench.specgen`), then

- in a fresh Python process, time ``import host.web.app`` and ``create_app()`` (load, validate,
  compile: a worker's own start-up), and read its resident memory;
- under gunicorn (one worker, pinned), time from launch to the first answered ``tools/list``
  and read the worker's resident memory after it;
- at the largest size, time complete ``tools/list`` listings (following ``nextCursor``).

``host validate`` time comes from ``bench/validate_bench.py`` (``main(n) -> dict``), also in a
fresh process.

NOTE: each fresh process's figure is the best of :data:`REPEATS` (each one cold, as a worker's
start and a ``host validate`` are), as the throughput rounds keep their best: on a shared machine
one run moved by half between full runs (``host validate`` 1.9 and 3.1 s the same day).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bench import loadgen, servers, specgen

__all__ = ["REPEATS", "ScaleRun", "list_tools", "measure_size", "measure_validate"]

#: Fresh processes per start-up and ``host validate`` figure; the fastest is kept.
REPEATS = 3

_CREATE = """
import json, time, resource
t0 = time.perf_counter()
from host.web.app import create_app
t1 = time.perf_counter()
create_app()
t2 = time.perf_counter()
rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
print(json.dumps({"import_s": t1 - t0, "create_s": t2 - t1, "peak_rss_mb": rss}))
"""

_VALIDATE = """
import json, sys
sys.path.insert(0, {root!r})
from bench.validate_bench import main
print(json.dumps(main({n})))
"""


@dataclass
class ScaleRun:
    """What one spec-directory size measured."""

    tools: int
    import_s: float = 0.0
    create_s: float = 0.0
    create_runs_s: list[float] = field(default_factory=list)
    create_peak_rss_mb: float = 0.0
    launch_to_ready_s: float = 0.0
    worker_rss_mb: list[float] = field(default_factory=list)
    list_ms: list[float] = field(default_factory=list)
    list_bytes: int = 0
    listed: int = 0
    error: str | None = None


def _last_json(out: str) -> dict[str, Any]:
    for line in reversed(out.strip().splitlines()):
        if line.startswith("{"):
            parsed: dict[str, Any] = json.loads(line)
            return parsed
    raise ValueError(f"no JSON line in the output: {out[-500:]!r}")


def _fastest(
    code: str, env: dict[str, str], cpus: frozenset[int] | None, key: str, runs: int
) -> dict[str, Any]:
    """The JSON line of the run of ``code`` (``runs`` fresh processes) with the least ``key``,
    with every run's ``key`` added as ``runs_s``."""
    results = [_last_json(_python(code, env, cpus, 120)) for _ in range(max(1, runs))]
    best = min(results, key=lambda result: float(result[key]))
    return {**best, "runs_s": [round(float(result[key]), 3) for result in results]}


def _python(code: str, env: dict[str, str], cpus: frozenset[int] | None, timeout: float) -> str:
    pin = None if cpus is None else (lambda: os.sched_setaffinity(0, cpus))
    done = subprocess.run(
        [sys.executable, "-c", code],
        cwd=servers.ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
        preexec_fn=pin,
        check=False,
    )
    if done.returncode != 0:
        tail = "\n".join((done.stderr or done.stdout).strip().splitlines()[-6:])
        raise RuntimeError(f"exit {done.returncode}: {tail}")
    return done.stdout


def list_tools(port: int) -> tuple[float, int, int]:
    """One complete ``tools/list`` (every page): (seconds waiting, bytes, tools)."""
    cursor: str | None = None
    waited, size, count = 0.0, 0, 0
    for _ in range(1000):
        params: dict[str, Any] = {} if cursor is None else {"cursor": cursor}
        request = loadgen.build_request(port, "tools/list", params)
        start = time.perf_counter()
        status, body = loadgen.request_once(port, request)
        waited += time.perf_counter() - start
        if status != 200:
            raise RuntimeError(f"tools/list: HTTP {status}: {body[:300]!r}")
        result = json.loads(body)["result"]
        size += len(body)
        count += len(result.get("tools", []))
        cursor = result.get("nextCursor")
        if not cursor:
            break
    return waited, size, count


def measure_size(
    tools: int,
    work: Path,
    env: dict[str, str],
    cpus: frozenset[int] | None,
    list_repeats: int = 0,
    runs: int = REPEATS,
) -> ScaleRun:
    """Generate ``tools`` tools and measure start-up (the fastest of ``runs`` fresh processes),
    memory and (optionally) ``tools/list``."""
    run = ScaleRun(tools)
    specs = specgen.generate(work / f"specs-{tools}", tools)
    env = {**env, "HOST_SPECS": str(specs)}
    try:
        created = _fastest(_CREATE, env, cpus, "create_s", runs)
        run.import_s, run.create_s = created["import_s"], created["create_s"]
        run.create_runs_s = created["runs_s"]
        run.create_peak_rss_mb = created["peak_rss_mb"]
        port = servers.free_port()
        cmd = servers.gunicorn_cmd("host.web.wsgi:app", port, 1)
        log = work / f"host-scale-{tools}.log"
        with servers.Server(f"host ({tools} tools)", cmd, port, env, cpus, log) as server:
            run.launch_to_ready_s = server.wait_ready(lambda: list_tools(port)[2] > 0, 60)
            _, run.list_bytes, run.listed = list_tools(port)
            for _ in range(list_repeats):
                run.list_ms.append(1e3 * list_tools(port)[0])
            run.worker_rss_mb = [servers.rss_mb(p) for p in servers.worker_pids(server.pid)]
    except (RuntimeError, ValueError, KeyError, OSError, subprocess.TimeoutExpired) as exc:
        run.error = f"{type(exc).__name__}: {exc}"
    return run


def measure_validate(
    n: int, env: dict[str, str], cpus: frozenset[int] | None, runs: int = REPEATS
) -> tuple[dict[str, Any] | None, str | None]:
    """``bench.validate_bench.main(n)``, the fastest of ``runs`` fresh processes: (its dict, with
    every run's seconds as ``runs_s``, and None) or (None, why not)."""
    if not (servers.ROOT / "bench" / "validate_bench.py").exists():
        return None, "bench/validate_bench.py is not there yet"
    try:
        code = _VALIDATE.format(root=str(servers.ROOT), n=n)
        return _fastest(code, env, cpus, "seconds", runs), None
    except (RuntimeError, ValueError, OSError, subprocess.TimeoutExpired) as exc:
        return None, f"{type(exc).__name__}: {exc}"
