"""ISO 8601 times: :func:`host.times.iso` writes, without strftime, what datetime writes.

The fast path keeps each second's text; generated times (whole, fractional, on the rounding
edges of a millisecond and a microsecond, before 1970 and past 9999) must read as
``datetime.fromtimestamp(...).strftime(...)`` makes them, and read back with ``parse_iso``.
"""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from host.times import iso, parse_iso


def by_datetime(when: float, ms: bool) -> str:
    moment = datetime.fromtimestamp(when, tz=UTC)
    if ms:
        return moment.strftime("%Y-%m-%dT%H:%M:%S.") + f"{moment.microsecond // 1000:03d}Z"
    return moment.strftime("%Y-%m-%dT%H:%M:%SZ")


EDGES = st.builds(
    lambda s, f: s + f,
    st.integers(min_value=0, max_value=2**33),
    st.sampled_from([0.0, 0.0005, 0.9995, 0.9999995, 0.9999994, 5e-7, 4.9e-7, 0.123456]),
)
TIMES = st.floats(min_value=-1e10, max_value=253402300799.0) | EDGES


@settings(max_examples=400, deadline=None)
@given(TIMES, st.booleans())
def test_iso_is_what_datetime_writes(when: float, ms: bool) -> None:
    assert iso(when, ms=ms) == by_datetime(when, ms)


def test_a_second_kept_is_not_read_for_another() -> None:
    for when in (1_700_000_000.25, 1_700_000_001.5, 1_700_000_000.75, 1_700_000_000.9999996):
        assert iso(when, ms=True) == by_datetime(when, True)
        assert iso(when) == by_datetime(when, False)
    assert parse_iso(iso(1_700_000_000.25, ms=True)) == 1_700_000_000.25


def test_times_datetime_cannot_write_fail_as_before() -> None:
    with pytest.raises(ValueError, match="out of range"):
        iso(253402300800.0)
