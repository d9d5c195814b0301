"""The benchmark's ratios, their targets, and the printed report."""

from __future__ import annotations

import platform
from typing import TYPE_CHECKING, Any

from bench import counted
from bench.prices import ALL, FSYNC, STUBBED
from bench.report import Check, table

if TYPE_CHECKING:
    from bench.run import Bench
    from bench.throughput import Measured, TargetRun

__all__ = ["build_checks", "render", "scale_checks", "validate_seconds"]

# The performance issue's targets (the ceiling ratios are an earlier issue's, kept as a gauge).
PLAIN_VS_SDK = 1.5
PLAIN_VS_CEILING = 0.70
EXCHANGE_VS_SDK = 1.05
EXCHANGE_VS_CEILING = 0.55
#: Machinery by CPU, the durable commits' fsync priced apart (its wall and CPU shown beside).
PLAIN_MACHINERY_US = 170.0
EXCHANGE_MACHINERY_US = 900.0
STARTUP_S = 2.0
RSS_MB = 60.0
VALIDATE_S = 3.0


def _m(bench: Bench, label: str, kind: str) -> Measured | None:
    run = bench.runs.get(label)
    if run is None or run.error:
        return None
    measured: Measured | None = getattr(run, kind)
    return measured


def _ratio(a: Measured | None, b: Measured | None) -> float | None:
    if a is None or b is None or not b.result.rate:
        return None
    return a.result.rate / b.result.rate


def _cpu_ratio(a: Measured | None, b: Measured | None) -> str:
    if a is None or b is None or not a.server_cpu_us:
        return ""
    return f"by server CPU: {b.server_cpu_us / a.server_cpu_us:.2f}x"


def _at_least(value: float | None, target: float) -> bool | None:
    return None if value is None else value >= target


def _below(value: float | None, target: float) -> bool | None:
    return None if value is None else value < target


def validate_seconds(result: dict[str, Any] | None) -> float | None:
    """The seconds figure in ``validate_bench.main``'s dict (the first key that names seconds)."""
    if not result:
        return None
    for key, value in result.items():
        if isinstance(value, int | float) and (
            key in ("seconds", "elapsed", "time") or key.endswith(("_s", "seconds"))
        ):
            return float(value)
    return None


def _p99(name: str, a: Measured | None, b: Measured | None) -> Check:
    """``a``'s p99 latency over ``b``'s, at the same load: at most 1.0."""
    if a is None or b is None or not b.result.p(99):
        return Check(name, None, "x", "<= 1.0", None)
    value = a.result.p(99) / b.result.p(99)
    note = f"{a.result.p(99):.1f} ms vs {b.result.p(99):.1f} ms"
    return Check(name, value, "x", "<= 1.0", value <= 1.0, note)


def _versus(name: str, a: Measured | None, b: Measured | None, floor: float = 0.0) -> Check:
    """``a / b`` by throughput, held to ``>= floor`` when one is given."""
    value = _ratio(a, b)
    if not floor:
        return Check(name, value, note=_cpu_ratio(a, b))
    return Check(name, value, "x", f">= {floor}", _at_least(value, floor), _cpu_ratio(a, b))


def _machinery(bench: Bench) -> list[Check]:
    """The host's in-process machinery per plain call and per exchange, wall and CPU."""
    found = bench.machinery or {}
    why = bench.machinery_error or ""
    checks = []
    for kind, label, most in (
        ("plain", "plain call", PLAIN_MACHINERY_US),
        ("exchange", "exchange (2 requests)", EXCHANGE_MACHINERY_US),
    ):
        figures = found.get(f"{kind}_us") or {}
        used = figures.get("machinery")
        checks.append(
            Check(f"host machinery per {label} (wall)", used, "µs",
                  note=why or "in-process, no sockets; the fsync's wait included")
        )  # fmt: skip
        checks.append(_machinery_cpu(label, figures.get("machinery CPU"), found, kind, most, why))
    for kind, label in (("plain", "plain call"), ("exchange", "exchange (2 requests)")):
        counted = (found.get("footprint") or {}).get(kind) or {}
        functions = counted.get("functions")
        note = why or f"of them the host's own: {counted.get('host functions', 0)}"
        checks.append(Check(f"functions run per {label}", functions, "count", note=note))
    large = found.get("large_result") or {}
    host_us, encode_us = large.get("host_us"), large.get("one_encode_us")
    ratio = host_us / encode_us if host_us and encode_us else None
    size = f" ({large['value_bytes'] / 1000:,.0f} KB)" if large.get("value_bytes") else ""
    checks.append(
        Check(f"large result{size}: host call / one JSON encoding", ratio,
              note=why or f"in-process: {host_us or 0:,.0f} against {encode_us or 0:,.0f} µs")
    )  # fmt: skip
    return checks


def _machinery_cpu(
    label: str, cpu: float | None, found: dict[str, Any], kind: str, most: float, why: str
) -> Check:
    """The machinery by CPU with the durable commits' fsync priced apart, held to ``most``.

    NOTE: the fsync's price is the CPU it adds in paired rounds (:mod:`bench.prices`): the
    kernel's work on the commit and the process's own work around each wait. The issue prices it
    apart from the machinery, and the disk is what this machine's figure says least about.
    """
    name, target = f"host machinery per {label} (CPU, fsync apart)", f"<= {most:.0f} µs"
    fsync = (found.get("prices_us") or {}).get(kind, {}).get(FSYNC)
    if cpu is None or not fsync:
        return Check(name, None, "µs", target, None, why or "needs the machinery and its prices")
    wall_us, cpu_us = max(fsync[0], 0.0), max(fsync[1], 0.0)
    rest = cpu - cpu_us
    note = (
        f"{cpu:,.0f} µs by CPU, of which the durable commits' fsync {cpu_us:,.0f} "
        f"(its wall time {wall_us:,.0f})"
        if cpu_us
        else f"{cpu:,.0f} µs by CPU; no durable commit to take away (its price: noise)"
    )
    return Check(name, rest, "µs", target, rest <= most, note)


def _instructions(bench: Bench) -> list[Check]:
    """Instructions per call in process against the issue's base revision: at most 60% of it."""
    found = bench.instructions or {}
    counts, base = found.get("counts") or {}, found.get("base", counted.BASE)
    checks = []
    for kind, label in (("plain", "plain call"), ("exchange", "exchange")):
        name, target = f"instructions per {label}: this / {base}", f"<= {counted.TARGET}"
        threads = counts.get(kind)
        if not threads:
            note = bench.instructions_error or "the instructions section did not run"
            checks.append(Check(name, None, "x", target, None, note))
            continue
        this, was = sum(threads["this"]), sum(threads["base"])
        ratio = this / was
        note = (
            f"{this / 1000:,.1f}k against {was / 1000:,.1f}k; the request's thread "
            f"{threads['this'][0] / 1000:,.1f}k against {threads['base'][0] / 1000:,.1f}k"
        )
        checks.append(Check(name, ratio, "x", target, ratio <= counted.TARGET, note))
    return checks


def _served_prices(bench: Bench) -> list[Check]:
    """What the guarantees cost served: the host's server CPU less that of the host without them."""
    checks = []
    for kind, per in (("plain", "plain call"), ("exchange", "exchange")):
        host, bare = _m(bench, "host", kind), _m(bench, STUBBED, kind)
        price = note = None
        if host is not None and bare is not None:
            price = host.server_cpu_us - bare.server_cpu_us
            note = f"served: {host.server_cpu_us:,.0f} against {bare.server_cpu_us:,.0f} µs/op"
        checks.append(Check(f"guarantees per {per}, served (server CPU)", price, "µs",
                            note=note or "needs both hosts served"))  # fmt: skip
    return checks


def build_checks(bench: Bench) -> list[Check]:
    """Every ratio of the report, each against a baseline measured in this run."""
    host_p, host_x = _m(bench, "host", "plain"), _m(bench, "host", "exchange")
    sdk_p, sdk_x = _m(bench, "sdk-fastest", "plain"), _m(bench, "sdk-fastest", "exchange")
    dflt_p, dflt_x = _m(bench, "sdk-default", "plain"), _m(bench, "sdk-default", "exchange")
    ceil_p, ceil_x = _m(bench, "ceiling", "plain"), _m(bench, "ceiling", "exchange")
    two = "host-2-workers-unpinned"
    checks = [
        _versus("plain call: host / SDK fastest", host_p, sdk_p, PLAIN_VS_SDK),
        _versus("plain call: host / SDK default", host_p, dflt_p),
        _versus("plain call: host / ceiling", host_p, ceil_p, PLAIN_VS_CEILING),
        _versus("exchange: host / SDK fastest", host_x, sdk_x, EXCHANGE_VS_SDK),
        _versus("exchange: host / SDK default", host_x, dflt_x),
        _versus("exchange: host / ceiling's two requests", host_x, ceil_x, EXCHANGE_VS_CEILING),
        _p99("plain call p99: host / SDK fastest", host_p, sdk_p),
        _p99("exchange p99: host / SDK fastest", host_x, sdk_x),
    ]
    cost = _ratio(host_p, host_x)
    note = ""
    if host_p and host_x and host_p.server_cpu_us:
        note = f"by server CPU: {host_x.server_cpu_us / host_p.server_cpu_us:.2f}x"
    checks.append(Check("exchange cost / plain call (host)", cost, note=note))
    for kind in ("plain", "exchange"):
        fast, slow = _m(bench, "ceiling", kind), _m(bench, "ceiling-python-parser", kind)
        if slow is not None:
            checks.append(_versus(f"C parser / Python parser, ceiling, {kind}", fast, slow))
        fast, slow = _m(bench, "host", kind), _m(bench, "host-python-parser", kind)
        if slow is not None:
            checks.append(_versus(f"C parser / Python parser, host, {kind}", fast, slow))
    checks.append(
        _versus("host 2 workers unpinned / 1 pinned, plain", _m(bench, two, "plain"), host_p)
    )
    checks.append(
        _versus("host 2 workers unpinned / 1 pinned, exchange", _m(bench, two, "exchange"), host_x)
    )
    pinned = "host-2-workers-pin-workers"
    for kind in ("plain", "exchange"):
        each = _m(bench, pinned, kind)
        if each is not None:
            checks.append(_versus(f"host 2 workers --pin-workers / unpinned, {kind}", each,
                                  _m(bench, two, kind)))  # fmt: skip
    checks += _machinery(bench)
    checks += _instructions(bench)
    checks += _served_prices(bench)
    return checks + scale_checks(bench)


def scale_checks(bench: Bench) -> list[Check]:
    """The start-up, memory and ``host validate`` targets at 1,000 tools."""
    checks: list[Check] = []
    big = next((r for r in bench.scale_runs if r.tools == 1000 and not r.error), None)
    startup = big.create_s if big else None
    rss = max(big.worker_rss_mb) if big and big.worker_rss_mb else None
    why = "" if big else "needs the full run with the host"
    checks.append(
        Check("start-up, 1,000 tools (create_app)", startup, "s", f"< {STARTUP_S:.0f} s",
              _below(startup, STARTUP_S), _spread(big.create_runs_s) if big else why)
    )  # fmt: skip
    checks.append(
        Check(
            "RSS per worker, 1,000 tools", rss, "MB", f"< {RSS_MB:.0f} MB", _below(rss, RSS_MB), why
        )
    )
    seconds = validate_seconds(bench.validate)
    size = (bench.validate or {}).get("tools") or (bench.validate or {}).get("n") or 1000
    checks.append(
        Check(f"host validate, {size} specs", seconds, "s", f"< {VALIDATE_S:.0f} s",
              _below(seconds, VALIDATE_S) if size == 1000 else None,
              bench.validate_error or _spread((bench.validate or {}).get("runs_s") or []))
    )  # fmt: skip
    return checks


def _spread(runs: list[float]) -> str:
    """How a figure kept as the fastest of several fresh processes spread, for its note."""
    if len(runs) < 2:
        return ""
    return f"fastest of {len(runs)} fresh processes ({min(runs):.2f} to {max(runs):.2f} s)"


def _run_rows(bench: Bench) -> list[list[str]]:
    rows: list[list[str]] = []
    for label, run in bench.runs.items():
        if run.error:
            rows.append([label, "-", "-", "-", "-", "-", "-", "-", "-", "-", run.error[:120]])
            continue
        for kind in ("plain", "exchange"):
            measured: Measured | None = getattr(run, kind)
            if measured is None:
                continue
            r = measured.result
            rates = [m.result.rate for m in getattr(run, f"{kind}_runs")]
            spread = f"best of {len(rates)} ({min(rates):,.0f}-{max(rates):,.0f})"
            rss = "/".join(f"{x:.0f}" for x in run.rss_mb)
            rows.append([
                label, kind, f"{r.operations}", f"{r.rate:,.0f}", f"{r.p(50):.2f}",
                f"{r.p(99):.2f}", f"{measured.server_cpu_us:,.0f}", f"{r.client_cpu_us:.0f}",
                f"{r.errors}", rss, spread if len(rates) > 1 else "",
            ])  # fmt: skip
    return rows


def _machinery_rows(bench: Bench) -> list[list[str]]:
    m = bench.machinery or {}
    plain, exchange = m.get("plain_us", {}), m.get("exchange_us", {})
    rows = [
        [f"whole call: {k}", f"{plain.get(k, 0):,.1f}", f"{exchange.get(k, 0):,.1f}"]
        for k in ("host", "ceiling", "handlers")
    ]
    used = (plain.get("machinery", 0.0), exchange.get("machinery", 0.0))
    rows.append(
        ["= host machinery (host - ceiling - handlers)", f"{used[0]:,.1f}", f"{used[1]:,.1f}"]
    )
    parts = m.get("parts_us", {})
    for name, (p, x) in parts.items():
        if name != "handlers (user code)":
            rows.append([f"  of which {name} (profile)", f"{p:,.1f}", f"{x:,.1f}"])
    named = [sum(v[i] for k, v in parts.items() if k != "handlers (user code)") for i in (0, 1)]
    rest = (used[0] - named[0], used[1] - named[1])
    rows.append(
        ["  of which the rest of the host (remainder)", f"{rest[0]:,.1f}", f"{rest[1]:,.1f}"]
    )
    return rows


def _price_rows(bench: Bench) -> list[list[str]]:
    m = bench.machinery or {}
    prices: dict[str, dict[str, list[float]]] = m.get("prices_us") or {}
    plain, exchange = prices.get("plain", {}), prices.get("exchange", {})
    rows = []
    for name in plain:
        cells = []
        for figures in (plain.get(name), exchange.get(name)):
            if figures is None or len(figures) != 4:
                cells += ["-", "-"]
                continue
            wall, cpu, low, high = figures
            cells += [f"{wall:,.1f} ({low:,.0f} to {high:,.0f})", f"{cpu:,.1f}"]
        rows.append([name, *cells])
    rest = []
    for kind, found in (("plain_us", plain), ("exchange_us", exchange)):
        f, together = m.get(kind, {}), found.get(ALL)
        if not together:
            rest += ["-", "-"]
            continue
        wall, cpu = f.get("machinery", 0.0), f.get("machinery CPU", 0.0)
        rest += [f"{wall - together[0]:,.1f}", f"{cpu - together[1]:,.1f}"]
    rows.append(["the rest of the machinery", *rest])
    return rows


def _loadgen_line(run: TargetRun | None) -> str:
    if run is None or run.error or run.plain is None:
        return "load generator: no ceiling run to measure it against"
    r = run.plain.result
    top = 1e6 / r.client_cpu_us if r.client_cpu_us else 0.0
    return (
        f"load generator: {r.client_cpu_us:.0f} µs CPU per request against the ceiling "
        f"({r.rate:,.0f} calls/s), so it could drive about {top:,.0f} requests/s on its core"
    )


_RUN_HEADS = [
    "server", "workload", "ops", "ops/s", "p50 ms", "p99 ms", "server CPU µs/op",
    "client CPU µs/req", "errors", "RSS MB", "note",
]  # fmt: skip
_SCALE_HEADS = [
    "tools", "import s", "create_app s", "launch->ready s", "RSS MB/worker", "tools/list p50 ms",
    "listing",
]  # fmt: skip
_PRICE_HEADS = ["guarantee", "plain: wall (quartiles)", "CPU", "exchange: wall (quartiles)", "CPU"]


def render(bench: Bench, seconds: float) -> str:
    """The whole printed report."""
    pin = (
        f"server pinned to CPU {sorted(bench.server_cpus or [])}, load generator to "
        f"{sorted(bench.client_cpus)}"
        if bench.pinned
        else "one CPU: nothing pinned"
    )
    plan = bench.plan
    out = [
        f"host benchmarks: {'quick smoke run' if bench.quick else 'full run'} in {seconds:.0f} s; "
        f"Python {platform.python_version()}; {pin}",
        f"{plan.calls} plain calls and {plan.exchanges} exchanges per timed run, "
        f"{plan.concurrency} keep-alive connections, after {plan.warmup} warm-up operations; "
        f"{plan.rounds} round(s) per server, interleaved, the best kept",
        "",
        "Ratios (each against a baseline measured in this run; targets are the issue's)",
        table(
            ["metric", "value", "target", "verdict", "note"], [c.cells() for c in bench.checks()]
        ),
        "",
        "Raw figures: tools/call on loopback (exchange = question, answer, act; 2 requests)",
        table(_RUN_HEADS, _run_rows(bench)),
        _loadgen_line(bench.runs.get("ceiling")),
        *_machinery_tables(bench),
        *_scale_table(bench),
    ]
    if bench.validate is not None:
        out += ["", f"host validate: {bench.validate}"]
    out += [f"note: {note}" for note in bench.notes]
    out += [f"ERROR: {error}" for error in bench.errors]
    return "\n".join(out)


def _machinery_tables(bench: Bench) -> list[str]:
    """The in-process machinery by part, and the price of each guarantee, when measured."""
    if not bench.machinery:
        return []
    out = ["", "Host machinery per call, µs, in-process (no sockets, no gunicorn)"]
    out.append(table(["part", "plain call", "exchange (2 requests)"], _machinery_rows(bench)))
    if bench.machinery.get("prices_us"):
        out += ["", "What each guarantee costs per call, µs, in-process (timed with it taken away)"]
        out.append(table(_PRICE_HEADS, _price_rows(bench)))
    return out


def _scale_table(bench: Bench) -> list[str]:
    """Start-up, memory and listing by the number of tools, when measured."""
    if not bench.scale_runs:
        return []
    rows = []
    for s in bench.scale_runs:
        if s.error:
            rows.append([f"{s.tools}", "-", "-", "-", "-", "-", s.error[:120]])
            continue
        listing = f"{sorted(s.list_ms)[len(s.list_ms) // 2]:.1f}" if s.list_ms else "-"
        rows.append([
            f"{s.tools}", f"{s.import_s:.2f}", f"{s.create_s:.3f}",
            f"{s.launch_to_ready_s:.2f}", "/".join(f"{x:.0f}" for x in s.worker_rss_mb),
            listing, f"{s.listed} tools, {s.list_bytes:,} bytes",
        ])  # fmt: skip
    return ["", "Scale with the number of tools (one gunicorn worker)", table(_SCALE_HEADS, rows)]
