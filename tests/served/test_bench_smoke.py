"""Smoke tests of the benchmarks: ``bench/run.py --quick`` runs, measures, reports and cleans up.

The quick run is real (real uvicorn and gunicorn servers on 127.0.0.1, a few hundred calls each)
but asserts only that every part ran and answered correctly, never a speed: the targets are the
benchmark's own business (PASS/MISS in its report), not the test suite's.
"""

from __future__ import annotations

import importlib.util
import json
import socket
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from support.paths import ROOT

# NOTE: bench/ is a directory of scripts beside the package, not part of the installed package.
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from bench import loadgen, prices
from bench.run import SERVERS
from bench.throughput import answer_for

pytestmark = pytest.mark.served

HOST_MISSING = importlib.util.find_spec("host.web.wsgi") is None
SDK_RUNS = ("sdk-fastest", "sdk-default", "sdk-fastest-resolver")


def _bench(tmp: Path, *args: str) -> tuple[subprocess.CompletedProcess[str], dict[str, Any]]:
    out = tmp / "bench.json"
    done = subprocess.run(
        [sys.executable, str(ROOT / "bench" / "run.py"), "--quick", "--json", str(out), *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=240,
        check=False,
    )
    assert out.exists(), done.stdout + done.stderr
    return done, json.loads(out.read_text())


def _closed(port: int) -> bool:
    with socket.socket() as sock:
        sock.settimeout(1)
        return sock.connect_ex(("127.0.0.1", port)) != 0


@pytest.fixture(scope="module")
def quick(tmp_path_factory: pytest.TempPathFactory) -> tuple[str, dict[str, Any], int]:
    done, raw = _bench(tmp_path_factory.mktemp("bench"))
    return done.stdout, raw, done.returncode


def _clean_runs(run: dict[str, Any], plain: int, exchanges: int) -> None:
    assert run["error"] is None
    (p,) = run["plain"]
    (x,) = run["exchange"]
    assert (p["operations"], p["errors"]) == (plain, 0)
    assert (x["operations"], x["requests"], x["errors"]) == (exchanges, 2 * exchanges, 0)
    assert p["rate"] > 0 and p["p50_ms"] > 0 and p["p99_ms"] >= p["p50_ms"]


def test_quick_run_measures_the_sdk_and_the_ceiling(quick: tuple[str, dict[str, Any], int]) -> None:
    report, raw, _ = quick
    plan = raw["plan"]
    for label in (*SDK_RUNS, "ceiling"):
        _clean_runs(raw["runs"][label], plan["calls"], plan["exchanges"])
    assert "Ratios (each against a baseline measured in this run" in report
    assert "load generator:" in report


def test_quick_run_stops_every_server(quick: tuple[str, dict[str, Any], int]) -> None:
    _, raw, _ = quick
    ports = [run["port"] for run in raw["runs"].values()]
    assert ports and all(_closed(port) for port in ports)


@pytest.mark.skipif(HOST_MISSING, reason="host.web.wsgi does not exist yet")
def test_quick_run_measures_the_host(quick: tuple[str, dict[str, Any], int]) -> None:
    report, raw, code = quick
    plan = raw["plan"]
    for label in ("host", "host-2-workers-unpinned", "host-2-workers-pin-workers", prices.STUBBED):
        _clean_runs(raw["runs"][label], plan["calls"], plan["exchanges"])
    # NOTE: --servers names only what SERVERS lists: a server the run measures must be there.
    assert set(raw["runs"]) <= set(SERVERS)
    # The ceiling imitates the host's answers, byte for byte in size.
    assert raw["runs"]["ceiling"]["sizes"] == raw["runs"]["host"]["sizes"]
    assert [s["tools"] for s in raw["scale"]] == [10, 100]
    assert all(s["error"] is None and s["listed"] == s["tools"] for s in raw["scale"])
    assert raw["validate"]["seconds"] > 0
    assert len(raw["validate"]["runs_s"]) == 1  # NOTE: a smoke run starts one process a figure
    machinery = raw["machinery"]
    assert machinery["calls"] == 200
    assert machinery["plain_us"]["host"] > machinery["plain_us"]["handlers"] > 0
    assert machinery["parts_us"]["requestState seal"][1] > 0  # only exchanges seal state
    large = machinery["large_result"]
    assert large["value_bytes"] > 100_000 and large["reply_bytes"] > 2 * large["value_bytes"]
    assert large["host_us"] > 0 and large["one_encode_us"] > 0  # NOTE: timings, never compared
    assert "large result (186 KB): host call / one JSON encoding" in report
    # NOTE: each price is a difference of noisy timings: its sign is not checked, its shape is.
    for workload in ("plain", "exchange"):
        priced = machinery["prices_us"][workload]
        assert list(priced) == [*prices.PARTS, prices.ALL]
        assert all(len(figures) == 4 for figures in priced.values())
    assert "What each guarantee costs per call" in report
    assert "the rest of the machinery" in report
    # NOTE: a count, not a timing: every call runs its handler's function, and more.
    for workload in ("plain", "exchange"):
        counted = machinery["footprint"][workload]
        assert counted["functions"] > counted["host functions"] > 0
    assert "guarantees per plain call, served (server CPU)" in report
    assert "guarantees per exchange, served (server CPU)" in report
    assert raw["errors"] == [] and code == 0, report


def test_a_server_that_cannot_start_is_reported_and_the_rest_still_runs(tmp_path: Path) -> None:
    # NOTE: two servers of the ten, so this costs a few CPU-seconds of the suite, not fourteen.
    done, raw = _bench(
        tmp_path,
        "--sections", "throughput",
        "--servers", "sdk-fastest,ceiling",
        "--handlers", str(tmp_path / "none"),
    )  # fmt: skip
    assert done.returncode == 1
    assert set(raw["runs"]) == {"sdk-fastest", "ceiling"}
    assert raw["runs"]["sdk-fastest"]["error"].startswith("ServerError: sdk-fastest exited")
    assert "ERROR: sdk-fastest: ServerError" in done.stdout
    assert raw["runs"]["ceiling"]["error"] is None
    assert all(_closed(run["port"]) for run in raw["runs"].values())


def test_a_server_the_bench_does_not_know_is_refused_by_name() -> None:
    done = subprocess.run(
        [sys.executable, str(ROOT / "bench" / "run.py"), "--servers", "host,hots"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 2
    assert "unknown server(s) ['hots']" in done.stderr and "sdk-fastest" in done.stderr


def test_exchange_splices_the_state_into_the_second_round() -> None:
    work = loadgen.Exchange.build(
        8000, "close_ticket", {"id": "T-1"}, {"close": {"action": "accept"}}
    )
    raw = work.second(b"v1.abc_DEF-123")
    head, body = raw.split(b"\r\n\r\n", 1)
    assert b"Mcp-Name: close_ticket" in head
    assert f"Content-Length: {len(body)}".encode() in head
    params = json.loads(body)["params"]
    assert params["requestState"] == "v1.abc_DEF-123"
    assert params["inputResponses"] == {"close": {"action": "accept"}}
    assert params["_meta"]["io.modelcontextprotocol/protocolVersion"] == "2026-07-28"


def test_answers_tick_every_box_and_take_the_first_choice() -> None:
    asked = {
        "pick": {
            "method": "elicitation/create",
            "params": {
                "requestedSchema": {
                    "type": "object",
                    "properties": {
                        "agent": {"type": "string", "enum": ["Nour", "Sam"]},
                        "sure": {"type": "boolean"},
                    },
                }
            },
        }
    }
    content = {"agent": "Nour", "sure": True}
    assert answer_for(asked) == {"pick": {"action": "accept", "content": content}}


def test_the_pinning_bench_times_a_pool_round_trip_on_one_cpu_and_on_all() -> None:
    import os

    from bench.pinning import round_trip_us

    cpus = os.sched_getaffinity(0)
    assert round_trip_us({min(cpus)}, n=200) > 0 and round_trip_us(set(cpus), n=200) > 0
    assert os.sched_getaffinity(0) == cpus  # the process is given back all its CPUs


def test_the_bench_runs_gunicorn_as_host_serve_does() -> None:
    from bench.servers import GUNICORN_THREADS, gunicorn_cmd
    from host.serve.start import ServeOptions, gunicorn_argv

    # NOTE: the figures are only the product's if the bench serves it the way it ships: a copy
    # of the settings once lacked --worker-connections, and gthread kept no connection alive.
    def options(argv: list[str]) -> dict[str, str]:
        flags = [n for n, arg in enumerate(argv) if arg.startswith("--")]
        return {
            argv[n]: argv[n + 1] if n + 1 < len(argv) and not argv[n + 1].startswith("--") else ""
            for n in flags
        }

    served = options(gunicorn_argv(ServeOptions(bind="127.0.0.1:8123", workers=1)))
    bench = options(gunicorn_cmd("host.web.wsgi:app", 8123, 1))
    assert ServeOptions().threads == GUNICORN_THREADS
    assert {flag: bench.get(flag) for flag in served} == served


@pytest.mark.skipif(not (ROOT / ".git").exists(), reason="needs a git checkout for its revision")
def test_compare_serves_each_side_from_its_own_checkout() -> None:
    """A revision is served from a worktree of its own, its host modules imported from there.

    NOTE: gunicorn imports its worker class from the folder it starts in before it reads --chdir:
    a side started from this checkout ran this checkout's code, and the comparison measured one
    tree against itself while the check of the workers' folder passed. The check is now of the
    modules imported (bench.servers.imported_from), and this test fails without the fix.
    """
    before = _worktrees()
    done = subprocess.run(
        [sys.executable, "-m", "bench.compare", "HEAD", ".", "--rounds", "1", "--calls", "60",
         "--exchanges", "12"],
        cwd=ROOT, capture_output=True, text=True, timeout=240, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    lines = done.stdout.splitlines()
    assert lines[0] == "== plain" and lines[3] == "== exchange", done.stdout
    assert lines[1].startswith("1:HEAD ") and "CPU x1.000" in lines[1]
    assert lines[2].startswith("2:. ") and "rate x" in lines[2]
    assert _worktrees() == before


def _worktrees() -> list[str]:
    listed = subprocess.run(
        ["git", "worktree", "list", "--porcelain"], cwd=ROOT, capture_output=True, text=True,
        check=True,
    )  # fmt: skip
    return [line for line in listed.stdout.splitlines() if line.startswith("worktree ")]
