"""The tenants benchmark reports a flood that starved the good caller, instead of failing on it."""

from __future__ import annotations

from bench.tenants import alice_line


def test_alices_calls_are_summed_up_with_the_refused_ones_counted() -> None:
    line = alice_line(300, [12.0, float("inf"), 30.0, 18.0], [4.0, 9.5])
    assert line == (
        "mallory: 300 connections flooding a hanging act; alice: 4 calls, 3 answered, "
        "p50 18.0 ms, max 30.0 ms; /healthz max 9.5 ms"
    )


def test_a_flood_that_answered_none_of_alices_calls_is_reported() -> None:
    line = alice_line(300, [float("inf"), float("inf")], [])
    assert line.endswith("alice: 2 calls, 0 answered, none answered; /healthz max not asked")
