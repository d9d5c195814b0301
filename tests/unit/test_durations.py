"""Durations as specs and settings write them: one parser, errors that say what to write."""

from __future__ import annotations

import pytest

from host.spec.durations import DurationError, format_duration, parse_duration


@pytest.mark.parametrize(
    ("text", "seconds"),
    [
        ("500ms", 0.5),
        ("30s", 30.0),
        ("10m", 600.0),
        ("8h", 28800.0),
        ("7d", 604800.0),
        ("1h30m", 5400.0),
        ("1.5h", 5400.0),
        (" 90d ", 7776000.0),
    ],
)
def test_durations_read_as_seconds(text: str, seconds: float) -> None:
    assert parse_duration(text) == seconds


@pytest.mark.parametrize(
    ("value", "says"),
    [
        (10, "10 has no unit: write 10s, 10m, 10h or 10d"),
        (1.5, "1.5 has no unit: write 1.5s"),
        ("10 min", "write 10m"),
        ("2 hours", "write 2h"),
        ("1 week", "like 7d"),
        ("soon", "like 30s, 10m, 8h or 7d"),
        ("0s", "must be longer than 0"),
        ("-5s", "like 30s"),
        ("", "like 30s"),
        (True, "not True"),
        (None, "not None"),
    ],
)
def test_bad_durations_say_what_to_write(value: object, says: str) -> None:
    with pytest.raises(DurationError) as caught:
        parse_duration(value)
    assert says in str(caught.value)


def test_a_maximum_is_enforced_and_named() -> None:
    assert parse_duration("30d", maximum=30 * 86400) == 30 * 86400
    with pytest.raises(DurationError, match="longer than the longest allowed, 30d"):
        parse_duration("31d", maximum=30 * 86400)


@pytest.mark.parametrize(
    ("seconds", "text"), [(28800, "8h"), (90, "90s"), (7776000, "90d"), (0.25, "250ms")]
)
def test_format_duration_round_trips(seconds: float, text: str) -> None:
    assert format_duration(seconds) == text
    assert parse_duration(text) == seconds
