"""Section 1: throughput and latency of ``tools/call`` on loopback.

Every server under test is started (pinned to its CPUs) and probed once with a full JSON decode:
one plain call, and one exchange (which checks the answers, learns the question's key and form,
and leaves exactly one email in each server's outbox, so every ``list_outbox`` answer has the same
content). Then, in rounds, each server in turn gets a warm-up and a timed run of a fixed number
of operations at a fixed concurrency, while its CPU time is read from ``/proc``; all plain rounds
come before all exchange rounds, because every exchange adds an email to the outbox. Interleaving
the servers round by round exposes them all to the same background noise of a shared machine;
the report keeps each server's best round and shows the spread.
"""

from __future__ import annotations

import contextlib
import json
import os
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bench import loadgen, servers

__all__ = ["Measured", "Plan", "ProbeError", "Spec", "TargetRun", "answer_for", "run_all"]

PLAIN_TOOL = "list_outbox"
ASK_TOOL = "close_ticket"
ASK_ARGS = {"id": "T-1"}


class ProbeError(RuntimeError):
    """A server answered a probe with something other than what the benchmark needs."""


@dataclass(frozen=True)
class Plan:
    """How much load: operations per timed run, warm-up operations, concurrency, time limit."""

    calls: int
    exchanges: int
    warmup: int
    rounds: int = 1
    concurrency: int = 16
    timeout: float = 90.0


@dataclass
class Measured:
    """One timed run and the server CPU it cost."""

    result: loadgen.LoadResult
    server_cpu_s: float

    @property
    def server_cpu_us(self) -> float:
        """Server CPU per operation, in µs (all the server's processes together)."""
        ops = self.result.operations
        return 1e6 * self.server_cpu_s / ops if ops else 0.0


@dataclass(frozen=True)
class Spec:
    """A server to measure: how to start it, and where it and its load generator run."""

    label: str
    cmd: list[str]
    port: int
    env: dict[str, str]
    pinned: bool
    exchanges: bool = True


@dataclass
class TargetRun:
    """Everything measured on one server; ``plain`` and ``exchange`` are the best rounds."""

    label: str
    port: int = 0
    ready_s: float = 0.0
    sizes: tuple[int, int, int] = (0, 0, 0)
    plain_runs: list[Measured] = field(default_factory=list)
    exchange_runs: list[Measured] = field(default_factory=list)
    rss_mb: list[float] = field(default_factory=list)
    error: str | None = None

    @property
    def plain(self) -> Measured | None:
        """The plain round with the highest throughput."""
        return max(self.plain_runs, key=lambda m: m.result.rate, default=None)

    @property
    def exchange(self) -> Measured | None:
        """The exchange round with the highest throughput."""
        return max(self.exchange_runs, key=lambda m: m.result.rate, default=None)


def _decode(status: int, body: bytes, what: str) -> dict[str, Any]:
    if status != 200:
        raise ProbeError(f"{what}: HTTP {status}: {body[:300]!r}")
    try:
        message = json.loads(body)
    except ValueError as exc:
        raise ProbeError(f"{what}: not JSON: {body[:300]!r}") from exc
    result = message.get("result") if isinstance(message, dict) else None
    if not isinstance(result, dict):
        raise ProbeError(f"{what}: no result: {body[:300]!r}")
    return result


def _fill(schema: dict[str, Any]) -> Any:
    if schema.get("enum"):
        return schema["enum"][0]
    if schema.get("oneOf"):
        return schema["oneOf"][0].get("const")
    kind = schema.get("type")
    if kind == "boolean":
        return True
    if kind in ("integer", "number"):
        return schema.get("minimum", 1)
    if kind == "array":
        items = schema.get("items") or {}
        choices = items.get("enum") or [c.get("const") for c in items.get("anyOf", [])]
        return choices[:1]
    return "x"


def answer_for(input_requests: dict[str, Any]) -> dict[str, Any]:
    """Accept every question, ticking every box and taking the first choice of every list."""
    answers: dict[str, Any] = {}
    for key, request in input_requests.items():
        schema = (request.get("params") or {}).get("requestedSchema") or {}
        props = schema.get("properties") or {}
        answers[key] = {"action": "accept", "content": {n: _fill(s) for n, s in props.items()}}
    return answers or {"close": {"action": "accept", "content": {"confirm": True}}}


def probe_plain(port: int) -> tuple[loadgen.Plain, int]:
    """The plain-call workload, checked once; and the size of its answer."""
    request = loadgen.build_request(port, "tools/call", {"name": PLAIN_TOOL, "arguments": {}})
    status, body = loadgen.request_once(port, request)
    result = _decode(status, body, PLAIN_TOOL)
    if result.get("resultType") != "complete" or result.get("isError"):
        raise ProbeError(f"{PLAIN_TOOL} did not finish cleanly: {body[:300]!r}")
    return loadgen.Plain(request), len(body)


def probe_exchange(port: int) -> tuple[loadgen.Exchange, int, int]:
    """The two-round workload, checked once; and the sizes of the question and the result."""
    first = loadgen.build_request(port, "tools/call", {"name": ASK_TOOL, "arguments": ASK_ARGS})
    status, ask_body = loadgen.request_once(port, first)
    ask = _decode(status, ask_body, f"{ASK_TOOL} round 1")
    if ask.get("resultType") != "input_required" or "requestState" not in ask:
        raise ProbeError(f"{ASK_TOOL} round 1 did not ask: {ask_body[:300]!r}")
    work = loadgen.Exchange.build(
        port, ASK_TOOL, ASK_ARGS, answer_for(ask.get("inputRequests") or {})
    )
    status, done_body = loadgen.request_once(port, work.second(ask["requestState"].encode()))
    done = _decode(status, done_body, f"{ASK_TOOL} round 2")
    if done.get("resultType") != "complete" or done.get("isError"):
        raise ProbeError(f"{ASK_TOOL} round 2 did not finish cleanly: {done_body[:300]!r}")
    return work, len(ask_body), len(done_body)


def _ready(port: int) -> bool:
    request = loadgen.build_request(port, "tools/call", {"name": PLAIN_TOOL, "arguments": {}})
    status, _ = loadgen.request_once(port, request, timeout=5)
    return status == 200


def _timed(
    port: int, pid: int, work: loadgen.Plain | loadgen.Exchange, ops: int, plan: Plan
) -> Measured:
    loadgen.run_load(port, work, plan.warmup, plan.concurrency, plan.timeout)
    before = servers.cpu_seconds(pid)
    result = loadgen.run_load(port, work, ops, plan.concurrency, plan.timeout)
    return Measured(result, servers.cpu_seconds(pid) - before)


_FAILURES = (servers.ServerError, ProbeError, loadgen.LoadError, OSError)


@dataclass
class _Live:
    spec: Spec
    run: TargetRun
    server: servers.Server
    plain: loadgen.Plain | None = None
    exchange: loadgen.Exchange | None = None


def _start(
    stack: contextlib.ExitStack, spec: Spec, server_cpus: frozenset[int] | None, work: Path
) -> _Live:
    cpus = server_cpus if spec.pinned else None
    server = servers.Server(
        spec.label, spec.cmd, spec.port, spec.env, cpus, work / f"{spec.label}.log"
    )
    live = _Live(spec, TargetRun(spec.label, spec.port), stack.enter_context(server))
    try:
        live.run.ready_s = server.wait_ready(lambda: _ready(spec.port))
        live.plain, plain_size = probe_plain(spec.port)
        ask_size = done_size = 0
        if spec.exchanges:
            live.exchange, ask_size, done_size = probe_exchange(spec.port)
        live.run.sizes = (plain_size, ask_size, done_size)
    except _FAILURES as exc:
        live.run.error = f"{type(exc).__name__}: {exc}"
        server.stop()
    return live


def run_all(
    specs: list[Spec],
    plan: Plan,
    server_cpus: frozenset[int] | None,
    client_cpus: frozenset[int],
    work: Path,
    ceilings: Callable[[dict[str, TargetRun]], list[Spec]],
    say: Callable[[str], None] = lambda _: None,
) -> dict[str, TargetRun]:
    """Start every server, then the ceilings (``ceilings`` builds them from the others' sizes),
    and measure them all in interleaved rounds. Every server is stopped before this returns."""
    runs: dict[str, TargetRun] = {}
    with contextlib.ExitStack() as stack:
        lives: list[_Live] = []
        for spec in specs:
            say(f"start {spec.label}")
            live = _start(stack, spec, server_cpus, work)
            runs[spec.label] = live.run
            if live.run.error is None:
                lives.append(live)
        for spec in ceilings(runs):
            say(f"start {spec.label}")
            live = _start(stack, spec, server_cpus, work)
            runs[spec.label] = live.run
            if live.run.error is None:
                lives.append(live)
        for kind in ("plain", "exchange"):
            for round_no in range(plan.rounds):
                for live in lives:
                    load = live.plain if kind == "plain" else live.exchange
                    if load is None or live.run.error:
                        continue
                    say(f"{kind} round {round_no + 1}/{plan.rounds}: {live.spec.label}")
                    os.sched_setaffinity(0, client_cpus if live.spec.pinned else servers.ALL_CPUS)
                    ops = plan.calls if kind == "plain" else plan.exchanges
                    try:
                        measured = _timed(live.spec.port, live.server.pid, load, ops, plan)
                        live.server.check_alive()  # NOTE: else another server answered
                    except _FAILURES as exc:
                        live.run.error = f"{type(exc).__name__}: {exc}"
                        continue
                    getattr(live.run, f"{kind}_runs").append(measured)
        for live in lives:
            live.run.rss_mb = [servers.rss_mb(p) for p in servers.worker_pids(live.server.pid)]
    os.sched_setaffinity(0, servers.ALL_CPUS)
    return runs
