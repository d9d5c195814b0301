"""Section 2: what the host's own machinery costs per call, in µs, measured in-process.

The host's WSGI app (``host.web.wsgi``, configured by the ``HOST_*`` variables like a gunicorn
worker) is called directly, without sockets or gunicorn, for plain ``list_outbox`` calls and for
two-round ``close_ticket`` exchanges. So is the ceiling app (``bench/ceiling.py``, answers of the
same sizes), and so are the handlers alone. Then:

    machinery = host in-process time - ceiling in-process time - handler time

is what the host adds on top of parsing JSON-RPC and answering with Falcon, not counting the
user's own code. The same runs' CPU time (every thread of the process) gives the machinery
without the time spent waiting on the disk (an act claim's fsync). A cProfile of the same calls
splits it into parts (header and ``_meta`` checks, argument validation, ``requestState`` seal and
open, answer check, template rendering, act claim and record, handler pool handoffs, the log
line, metrics, the audit queue), each counted once at its outermost call and scaled by the
unprofiled/profiled time ratio, since the profiler slows small functions more than large ones.
:mod:`bench.prices` then times what each guarantee costs by taking it away.

Run inside ``bench/run.py``, or alone: ``HOST_SPECS=specs HOST_HANDLERS=handlers
HOST_DATA_DIR=/tmp/x python -m bench.machinery 2000``.
"""

from __future__ import annotations

import cProfile
import importlib
import io
import json
import os
import pstats
import sys
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from falcon import testing

from bench import ceiling, loadgen, prices
from bench.throughput import ASK_ARGS, ASK_TOOL, PLAIN_TOOL, answer_for

__all__ = ["PARTS", "body_of", "call_app", "environ", "measure", "per_op"]

App = Callable[[dict[str, Any], Callable[..., Any]], Iterable[bytes]]

# Each part: the functions (file suffix, function name) whose outermost calls it counts.
PARTS: dict[str, tuple[tuple[str, str], ...]] = {
    "headers and _meta checks": (
        ("host/protocol/modern/envelope.py", "read_envelope"),
        ("host/protocol/revisions.py", "is_modern_message"),
        ("host/web/mcp.py", "origin_allowed"),
        ("host/web/mcp.py", "_accepts_json"),
    ),
    "argument validation": (("host/machine/run.py", "check_arguments"),),
    "requestState seal": (("host/protocol/modern/state.py", "seal"),),
    "requestState open": (("host/protocol/modern/state.py", "open"),),
    "answer check": (
        ("host/machine/forms.py", "check"),
        ("host/machine/types.py", "digest"),
    ),
    "template rendering": (
        ("host/spec/templates.py", "*"),
        ("host/machine/forms.py", "render"),
    ),
    "act claim and record": (
        ("host/store/shared.py", "claim_act"),
        ("host/store/shared.py", "act_state"),
        ("host/store/claims.py", "record"),
    ),
    "record of the act before it starts": (
        ("host/observers/audit.py", "lost_record"),
        ("host/protocol/core.py", "_lost_record"),
        # NOTE: a first round's act writes it alone; a claimed act's goes in with its claim.
        ("host/store/auditing.py", "write_audit"),
    ),
    "handler pool handoffs": (
        ("host/machine/timing.py", "call"),
        ("host/machine/timing.py", "submit"),
        ("concurrent/futures/_base.py", "result"),
    ),
    "per-call log line": (("host/protocol/events.py", "round_ended"),),
    "metrics": (("host/observers/metrics.py", "round_ended"),),
    "audit record (queued)": (("host/observers/audit.py", "round_ended"),),
}
# Handlers run on the pool's threads, which this profile does not see: the time the request
# thread waits for them is in the handoffs part, and the handlers' own time is measured alone.
_INSIDE_STORE: tuple[tuple[str, str], ...] = ()
_HANDLERS = (("host/machine/bind.py", "__call__"),)
#: The calls per workload from which every part is priced in full rounds (a full run: 2,000).
_FULL_PRICES_FROM = 1000

_Func = tuple[str, int, str]


def _matches(func: _Func, names: tuple[tuple[str, str], ...]) -> bool:
    path = func[0].replace(os.sep, "/")
    return any(path.endswith(f) and name in ("*", func[2]) for f, name in names)


def _outermost(stats: dict[_Func, Any], names: tuple[tuple[str, str], ...]) -> float:
    """Seconds spent in calls to ``names`` that do not come from ``names`` themselves."""
    total = 0.0
    for func, (_cc, _nc, _tt, _ct, callers) in stats.items():
        if not _matches(func, names):
            continue
        for caller, (_c, _n, _t, ct) in callers.items():
            if not _matches(caller, names):
                total += ct
    return total


def environ(body: bytes, tool: str) -> dict[str, Any]:
    """The WSGI environ of a modern ``tools/call`` of ``tool`` with ``body``."""
    headers = {
        "Content-Type": "application/json",
        "Accept": "application/json, text/event-stream",
        "MCP-Protocol-Version": loadgen.PROTOCOL_VERSION,
        "Mcp-Method": "tools/call",
        "Mcp-Name": tool,
    }
    env: dict[str, Any] = testing.create_environ(
        path="/mcp", method="POST", headers=headers, body=body, host="127.0.0.1", port=8000
    )
    return env


def call_app(app: App, env: dict[str, Any], body: bytes) -> bytes:
    """Call ``app`` with ``env`` and ``body``; the response body (raises unless HTTP 200)."""
    env = dict(env)
    env["wsgi.input"] = io.BytesIO(body)
    env["CONTENT_LENGTH"] = str(len(body))
    status: list[str] = []
    out = b"".join(app(env, lambda s, h, *a: status.append(s)))
    if not status or not status[0].startswith("200"):
        raise RuntimeError(f"HTTP {status[0] if status else '?'}: {out[:300]!r}")
    return out


class _Client:
    """Pre-built plain and exchange calls against one in-process WSGI app."""

    def __init__(self, app: App) -> None:
        self.app = app
        self.plain_body = body_of(loadgen.build_request(8000, "tools/call", _plain()))
        self.plain_env = environ(self.plain_body, PLAIN_TOOL)
        first = loadgen.build_request(8000, "tools/call", _ask())
        self.ask_body = body_of(first)
        self.ask_env = environ(self.ask_body, ASK_TOOL)
        asked = json.loads(call_app(app, self.ask_env, self.ask_body))["result"]
        self.work = loadgen.Exchange.build(
            8000, ASK_TOOL, ASK_ARGS, answer_for(asked.get("inputRequests") or {})
        )

    def plain(self) -> bytes:
        return call_app(self.app, self.plain_env, self.plain_body)

    def exchange(self) -> tuple[bytes, bytes]:
        asked = call_app(self.app, self.ask_env, self.ask_body)
        at = asked.find(b'"requestState"')
        start = asked.find(b'"', at + len(b'"requestState"')) + 1
        second = body_of(self.work.second(asked[start : asked.find(b'"', start)]))
        return asked, call_app(self.app, self.ask_env, second)


def _plain() -> dict[str, Any]:
    return {"name": PLAIN_TOOL, "arguments": {}}


def _ask() -> dict[str, Any]:
    return {"name": ASK_TOOL, "arguments": ASK_ARGS}


def body_of(request: bytes) -> bytes:
    """The body of a raw HTTP request made by :func:`bench.loadgen.build_request`."""
    return request.split(b"\r\n\r\n", 1)[1]


def per_op(fn: Callable[[], object], n: int, repeats: int = 3) -> float:
    """Best-of-``repeats`` seconds per call of ``fn``."""
    return _timed(fn, n, repeats)[0]


def _timed(fn: Callable[[], object], n: int, repeats: int = 3) -> tuple[float, float]:
    """Best-of-``repeats`` wall seconds per call of ``fn``, and the CPU seconds of that run.

    NOTE: CPU is the whole process's (every thread: the handler pool, the audit writer), so
    waiting on the disk (an act claim's fsync) counts in the wall time only.
    """
    best = (float("inf"), float("inf"))
    for _ in range(repeats):
        start, cpu = time.perf_counter(), time.process_time()
        for _ in range(n):
            fn()
        took = ((time.perf_counter() - start) / n, (time.process_time() - cpu) / n)
        best = min(best, took)
    return best


def _profile(fn: Callable[[], object], n: int) -> tuple[dict[_Func, Any], float]:
    profiler = cProfile.Profile()
    start = time.perf_counter()
    profiler.enable()
    for _ in range(n):
        fn()
    profiler.disable()
    elapsed = (time.perf_counter() - start) / n
    stats: dict[_Func, Any] = pstats.Stats(profiler).stats  # type: ignore[attr-defined]
    return stats, elapsed


def _footprint(stats: dict[_Func, Any], n: int) -> dict[str, int]:
    """How many distinct functions every call runs (called at least once a call), and the host's.

    NOTE: not a timing. Served, a call's code runs after gunicorn's own and finds little of itself
    in the CPU's caches, so the number of functions a call touches costs time of its own
    (``bench/RESULTS.md``).
    """
    every = [func for func, (_cc, nc, *_rest) in stats.items() if nc >= n]
    host = [func for func in every if "/host/" in func[0].replace(os.sep, "/")]
    return {"functions": len(every), "host functions": len(host)}


def _parts(stats: dict[_Func, Any], n: int, scale: float) -> dict[str, float]:
    parts = {name: _outermost(stats, funcs) for name, funcs in PARTS.items()}
    parts["act claim and record"] -= _outermost(stats, _INSIDE_STORE)
    parts["handlers (user code)"] = _outermost(stats, _HANDLERS)
    return {name: max(0.0, 1e6 * seconds * scale / n) for name, seconds in parts.items()}


def _large_result(n: int) -> dict[str, Any]:
    """:mod:`bench.large`'s figures, with a tenth of the calls (each is a few milliseconds)."""
    from bench import large  # NOTE: it imports this module

    return large.measure(max(10, n // 20))


@dataclass
class _Workload:
    """One workload's figures: whole-call timings (seconds per call), its parts and prices (µs)."""

    total: float
    cpu: float
    roof: float
    handlers: float
    parts: dict[str, float]
    prices: dict[str, list[float]]
    footprint: dict[str, int]

    @classmethod
    def measure(
        cls,
        host: Callable[[], object],
        roof: Callable[[], object],
        handlers: Callable[[], object],
        n: int,
        priced: tuple[int, int],
    ) -> _Workload:
        """Time ``host`` against ``roof`` and ``handlers``, profile it, and price its parts.

        ``priced`` is the calls per round and the rounds of :func:`bench.prices.measure`.
        """
        per_op(host, max(50, n // 10), 1)  # warm up
        total, cpu = _timed(host, n)
        roof_s, handlers_s = per_op(roof, n), per_op(handlers, n)
        stats, profiled = _profile(host, n)
        parts = _parts(stats, n, total / profiled)
        # NOTE: the request thread's wait on the pool includes the handlers' own run.
        handoffs = "handler pool handoffs"
        parts[handoffs] = max(0.0, parts[handoffs] - 1e6 * handlers_s)
        priced_parts = prices.measure(host, *priced)
        return cls(total, cpu, roof_s, handlers_s, parts, priced_parts, _footprint(stats, n))

    def machinery(self, *, cpu: bool = False) -> float:
        """µs per call of the host's own work: the host less the ceiling and the handlers."""
        return 1e6 * ((self.cpu if cpu else self.total) - self.roof - self.handlers)

    def figures(self) -> dict[str, float]:
        """The whole-call figures, in µs per call."""
        return {
            "host": 1e6 * self.total,
            "host CPU": 1e6 * self.cpu,
            "ceiling": 1e6 * self.roof,
            "handlers": 1e6 * self.handlers,
            "machinery": self.machinery(),
            "machinery CPU": self.machinery(cpu=True),
        }


def measure(n: int = 2000) -> dict[str, Any]:
    """Time ``n`` plain calls and ``n`` exchanges in-process; the figures in µs as a dict."""
    from host.web.wsgi import app as host_app  # the worker's app, from HOST_* variables

    handlers_dir = os.environ.get("HOST_HANDLERS", "handlers")
    sys.path.insert(0, str(Path(handlers_dir).resolve()))
    helpdesk: Any = importlib.import_module("helpdesk")

    host = _Client(host_app)
    plain_size = len(host.plain())
    asked, done = host.exchange()
    roof = _Client(ceiling.make_app((plain_size, len(asked), len(done))))

    def read_handler() -> None:
        helpdesk.list_outbox()

    def exchange_handlers() -> None:
        ticket = helpdesk.get_ticket(ASK_ARGS["id"])
        helpdesk.get_ticket(ASK_ARGS["id"])
        helpdesk.close_ticket(ASK_ARGS["id"], ticket)

    # NOTE: plain calls first: every exchange adds an email that list_outbox then returns. An
    # exchange's prices take fewer, longer rounds: a WAL checkpoint (every thousand pages or so,
    # a few ms) lands in one round of a pair, and must be spread over enough exchanges. A quick
    # run (the test suite's smoke run) prices each part in a few rounds: its figures only show
    # that every part can be priced, and the rounds were most of its time.
    plain_rounds, exchange_rounds = (15, 7) if n >= _FULL_PRICES_FROM else (3, 2)
    plain = _Workload.measure(
        host.plain, roof.plain, read_handler, n, (max(20, n // 8), plain_rounds)
    )
    exchange = _Workload.measure(
        host.exchange, roof.exchange, exchange_handlers, n, (max(10, n // 10), exchange_rounds)
    )
    return {
        "calls": n,
        "plain_us": plain.figures(),
        "exchange_us": exchange.figures(),
        "parts_us": {name: [plain.parts[name], exchange.parts[name]] for name in plain.parts},
        "footprint": {"plain": plain.footprint, "exchange": exchange.footprint},
        # Each part's price: {"plain": [wall, CPU, wall's quartiles], "exchange": the same}.
        "prices_us": {"plain": plain.prices, "exchange": exchange.prices},
        "large_result": _large_result(n),
        # The figure held to the target: the worse of a plain call and one request of an exchange.
        "machinery_us": max(plain.machinery(), exchange.machinery() / 2),
        # The same by CPU: what the host's own work costs, without waiting on the disk.
        "machinery_cpu_us": max(plain.machinery(cpu=True), exchange.machinery(cpu=True) / 2),
    }


if __name__ == "__main__":
    print(json.dumps(measure(int(sys.argv[1]) if len(sys.argv) > 1 else 2000), indent=2))
