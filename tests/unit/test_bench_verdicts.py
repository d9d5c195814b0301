"""The machinery's CPU target is held with the durable commits' fsync priced apart, as asked.

Issue 43 states the machinery targets by CPU "the fsync priced apart": the fsync's own price
(what it adds in paired rounds, :mod:`bench.prices`) is shown beside the figure, not in it.
"""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any, cast

from bench import verdicts
from bench.prices import FSYNC


def _checks(exchange_cpu: float, fsync: list[float] | None) -> dict[str, Any]:
    prices = {"exchange": {FSYNC: fsync}} if fsync is not None else {}
    machinery = {
        "plain_us": {"machinery": 130.0, "machinery CPU": 120.0},
        "exchange_us": {"machinery": 1200.0, "machinery CPU": exchange_cpu},
        "prices_us": {"plain": {FSYNC: [0.4, -0.6, -3.0, 2.0]}, **prices},
    }
    bench = SimpleNamespace(machinery=machinery, machinery_error=None)
    return {c.name: c for c in verdicts._machinery(cast(Any, bench))}


def test_the_exchange_passes_when_what_is_left_after_the_fsync_fits() -> None:
    check = _checks(1000.0, [510.0, 260.0, 470.0, 530.0])[
        "host machinery per exchange (2 requests) (CPU, fsync apart)"
    ]
    assert (check.value, check.ok, check.target) == (740.0, True, "<= 900 µs")
    assert check.note == (
        "1,000 µs by CPU, of which the durable commits' fsync 260 (its wall time 510)"
    )


def test_the_exchange_misses_when_the_rest_is_over_and_says_nothing_without_a_price() -> None:
    over = _checks(1250.0, [510.0, 260.0, 470.0, 530.0])
    assert over["host machinery per exchange (2 requests) (CPU, fsync apart)"].ok is False
    unpriced = _checks(700.0, None)["host machinery per exchange (2 requests) (CPU, fsync apart)"]
    assert (unpriced.value, unpriced.ok) == (None, None)


def test_a_plain_call_has_no_fsync_to_take_away() -> None:
    check = _checks(1000.0, None)["host machinery per plain call (CPU, fsync apart)"]
    # NOTE: a negative price (noise: a plain call commits nothing durably) takes nothing away.
    assert (check.value, check.ok, check.target) == (120.0, True, "<= 170 µs")
