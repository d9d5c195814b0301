"""What each guarantee costs a call, in-process: the host timed with that part taken away.

:mod:`bench.machinery` splits the host's machinery into parts with a profile, which slows small
functions more than large ones and cannot see other threads (the handler pool, the audit writer).
This measures the price of a guarantee directly: the same calls are timed with the part in place
and with it stubbed out, in alternating rounds on one CPU, and the price is the median of the
paired differences (pairs cancel the drift of a store that grows as the calls run).

The parts:

- ``handler pool handoff``: handlers and acts run on the request's thread, with no time limit;
- ``log line``: no ``tool call`` line per round;
- ``metrics``: no counters or histograms per round;
- ``audit record``: no record queued when a call ends (the act's record before it starts stays);
- ``durable commits' fsync``: act claims and results committed with ``synchronous = NORMAL``;

and all of them at once, whose price set against the whole machinery leaves what the rest of the
host costs, so that a miss of a speed target can be set against the price of what the host
promises (``bench/RESULTS.md``). NOTE: a host stubbed so exists only to measure: ``host serve``
never serves one (the benchmark serves one beside the host, ``bench/stubbed.py``, for the price
served).
"""

from __future__ import annotations

import contextlib
import statistics
import time
from collections.abc import Callable, Iterator
from typing import Any
from unittest import mock

from host.machine.timing import Handoff, Runner
from host.observers.audit import AuditObserver
from host.observers.metrics import MetricsObserver
from host.protocol.events import LogObserver
from host.store.sqlite.pool import Connections

__all__ = ["ALL", "FSYNC", "PARTS", "STUBBED", "measure", "price", "take_away"]

#: What "all of them at once" is called in the figures.
ALL = "all of them at once"

#: The label of the benchmark's server that serves the host without them (``bench/stubbed.py``).
STUBBED = "host-without-guarantees"


def _inline(self: Runner, call: Callable[[], Any]) -> Handoff[Any]:
    """``Runner.submit`` without the pool: ``call`` runs now, on the caller's thread."""
    handoff = Handoff(call)
    handoff.run()
    return handoff


_write = Connections.write


def _not_durable(self: Connections, **options: Any) -> Any:
    """``Connections.write`` that commits every transaction with ``synchronous = NORMAL``."""
    return _write(self, **{**options, "durable": False})


def _nothing(self: object, event: object) -> None:
    return None


#: The part whose wait on the disk varies most from one commit to the next.
FSYNC = "durable commits' fsync"


#: Each part, and the patches that take it away: (class, attribute, stand-in).
PARTS: dict[str, tuple[tuple[type, str, Callable[..., Any]], ...]] = {
    "handler pool handoff": ((Runner, "submit", _inline),),
    "log line": ((LogObserver, "round_ended", _nothing),),
    "metrics": ((MetricsObserver, "round_ended", _nothing),),
    "audit record": ((AuditObserver, "round_ended", _nothing),),
    FSYNC: ((Connections, "write", _not_durable),),
}


def _patchers(parts: tuple[str, ...]) -> list[Any]:
    """A patcher per stand-in that takes ``parts`` away (:data:`ALL`: every part)."""
    names = list(PARTS) if ALL in parts else parts
    return [
        mock.patch.object(owner, attribute, stand_in)
        for name in names
        for owner, attribute, stand_in in PARTS[name]
    ]


@contextlib.contextmanager
def _without(parts: tuple[str, ...]) -> Iterator[None]:
    """The host with ``parts`` taken away while the block runs."""
    with contextlib.ExitStack() as stack:
        for patcher in _patchers(parts):
            stack.enter_context(patcher)
        yield


def take_away(parts: tuple[str, ...]) -> None:
    """Take ``parts`` away for the rest of the process (what :mod:`bench.stubbed` serves).

    NOTE: patchers started so stay in place until the process ends; a context manager entered
    and dropped would be collected, and its exit would put every part back at once.
    """
    for patcher in _patchers(parts):
        patcher.start()


def _seconds(fn: Callable[[], object], n: int) -> tuple[float, float]:
    """Wall and CPU seconds (every thread's) per call of ``fn``, over ``n`` calls."""
    start, cpu = time.perf_counter(), time.process_time()
    for _ in range(n):
        fn()
    return (time.perf_counter() - start) / n, (time.process_time() - cpu) / n


def price(fn: Callable[[], object], part: str, n: int, rounds: int = 15) -> list[float]:
    """Seconds per call ``part`` costs ``fn``, from paired rounds: wall and CPU medians, and
    the wall's lower and upper quartiles (how far one pair strays on a busy machine).

    NOTE: CPU is the whole process's, so a handler pool thread's or the audit writer's work
    counts; waiting on the disk (an fsync) counts in the wall time only. Every other part is
    priced with the fsync taken away from both rounds of a pair: a commit's wait on a shared
    disk varies by more than most parts cost, and no part's own work depends on it.
    """
    base: tuple[str, ...] = () if part in (FSYNC, ALL) else (FSYNC,)
    walls: list[float] = []
    cpus: list[float] = []
    for round_ in range(rounds):
        # NOTE: which goes first alternates, so neither always runs on the larger store.
        order = (False, True) if round_ % 2 == 0 else (True, False)
        took: dict[bool, tuple[float, float]] = {}
        for stubbed in order:
            with _without((*base, part) if stubbed else base):
                took[stubbed] = _seconds(fn, n)
        walls.append(took[False][0] - took[True][0])
        cpus.append(took[False][1] - took[True][1])
    low, _, high = statistics.quantiles(walls, n=4)
    return [statistics.median(walls), statistics.median(cpus), low, high]


def measure(fn: Callable[[], object], n: int, rounds: int = 15) -> dict[str, list[float]]:
    """Each part's price (and all of them at once) in µs per call of ``fn``, as :func:`price`."""
    return {part: [1e6 * s for s in price(fn, part, n, rounds)] for part in (*PARTS, ALL)}
