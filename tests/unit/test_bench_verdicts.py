"""Issue 43's verdicts as the run prints them: the machinery, and the instructions counted.

Issue 43 states the machinery targets by CPU "the fsync priced apart": the fsync's own price
(what it adds in paired rounds, :mod:`bench.prices`) is shown beside the figure, not in it. Its
instruction target is 60% of what its base revision runs, counted in the same run.
"""

from __future__ import annotations

import shutil
from pathlib import Path
from types import SimpleNamespace
from typing import Any, cast

import pytest

from bench import counted, run, verdicts
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
    assert check.note == "120 µs by CPU; no durable commit to take away (its price: noise)"


def _counted(counts: dict[str, Any] | None, error: str | None = None) -> dict[str, Any]:
    bench = SimpleNamespace(instructions=counts, instructions_error=error)
    return {c.name: c for c in verdicts._instructions(cast(Any, bench))}


def test_instructions_are_held_to_sixty_percent_of_the_base_with_the_request_thread_shown() -> None:
    counts = {
        "base": "f439c5e",
        "counts": {
            "plain": {
                "base": [700_000.0, 40_000.0, 160_000.0],
                "this": [420_000.0, 0.0, 120_000.0],
            },
            "exchange": {"base": [2_000_000.0, 1_000_000.0], "this": [2_000_000.0, 900_000.0]},
        },
    }
    checks = _counted(counts)
    plain = checks["instructions per plain call: this / f439c5e"]
    assert (plain.value, plain.ok, plain.target) == (0.6, True, "<= 0.6")
    assert plain.note == ("540.0k against 900.0k; the request's thread 420.0k against 700.0k")
    exchange = checks["instructions per exchange: this / f439c5e"]
    assert (round(exchange.value or 0, 3), exchange.ok) == (0.967, False)


def test_instructions_not_counted_say_why() -> None:
    checks = _counted(None, "needs valgrind (Debian's valgrind package)")
    check = checks["instructions per plain call: this / f439c5e"]
    assert (check.value, check.ok) == (None, None)
    assert check.note == "needs valgrind (Debian's valgrind package)"


def test_a_base_the_clone_does_not_have_is_an_error_not_a_crash(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(shutil, "which", lambda name: f"/usr/bin/{name}")
    found, error = counted.measure(tmp_path, base="no-such-revision-" + "0" * 8)
    assert found is None
    assert error is not None and error.startswith("git worktree add no-such-revision-")


def test_a_quick_run_leaves_the_instructions_out_unless_asked() -> None:
    assert "instructions" not in run._parse(["--quick"]).sections
    assert "instructions" in run._parse([]).sections
    assert run._parse(["--quick", "--sections", "instructions"]).sections == ["instructions"]
