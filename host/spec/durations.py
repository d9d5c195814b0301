"""Durations as specs and settings write them: ``500ms``, ``30s``, ``10m``, ``8h``, ``7d``.

Parts add up (``1h30m``). One parser for every duration the host reads: step and server
``timeout``/``timeouts``, how long a ``confirm`` is ``remember``-ed, and settings such as
``HOST_AUDIT_RETENTION=90d``. Its errors say what to write instead, so each caller can show them
as they are.
"""

from __future__ import annotations

import math
import re

from host.errors import DurationError

__all__ = ["DURATION_PATTERN", "DurationError", "format_duration", "parse_duration"]

#: The same grammar as a JSON Schema ``pattern`` (for the spec language's schema and editors).
DURATION_PATTERN = r"^([0-9]+(\.[0-9]+)?(ms|s|m|h|d))+$"

_UNITS = {"ms": 0.001, "s": 1.0, "m": 60.0, "h": 3600.0, "d": 86400.0}
_PART = re.compile(r"([0-9]+(?:\.[0-9]+)?)(ms|s|m|h|d)")
_WHOLE = re.compile(DURATION_PATTERN)
_SPELLED = re.compile(r"^\s*([0-9]+(?:\.[0-9]+)?)\s*([A-Za-z]+)\s*$")
_ALIASES = {
    "msec": "ms",
    "millisecond": "ms",
    "milliseconds": "ms",
    "sec": "s",
    "secs": "s",
    "second": "s",
    "seconds": "s",
    "min": "m",
    "mins": "m",
    "minute": "m",
    "minutes": "m",
    "hr": "h",
    "hrs": "h",
    "hour": "h",
    "hours": "h",
    "day": "d",
    "days": "d",
}


def parse_duration(value: object, *, maximum: float | None = None) -> float:
    """The number of seconds ``value`` stands for.

    Args:
        value: The text as written (``"8h"``). A bare number is refused: its unit is unknown.
        maximum: The largest allowed value, in seconds.

    Raises:
        DurationError: with a message naming the problem and the way to write it.
    """
    if isinstance(value, bool) or not isinstance(value, str | int | float):
        raise DurationError(f"a duration is text like 30s, 10m, 8h or 7d, not {value!r}")
    if isinstance(value, int | float):
        raise DurationError(_no_unit(value, maximum))
    text = value.strip()
    if not _WHOLE.match(text):
        raise DurationError(_unreadable(text))
    seconds = sum(float(n) * _UNITS[unit] for n, unit in _PART.findall(text))
    if not math.isfinite(seconds) or seconds <= 0:
        raise DurationError(f"'{text}' must be longer than 0: write 1s or more")
    if maximum is not None and seconds > maximum:
        raise DurationError(
            f"'{text}' is longer than the longest allowed, {format_duration(maximum)}"
        )
    return seconds


def format_duration(seconds: float) -> str:
    """``seconds`` in the largest unit that divides it: 28800 → ``8h``, 90 → ``90s``."""
    for unit in ("d", "h", "m", "s"):
        size = _UNITS[unit]
        if seconds >= size and seconds % size == 0:
            return f"{int(seconds // size)}{unit}"
    return f"{round(seconds * 1000)}ms"


def _no_unit(value: float, maximum: float | None) -> str:
    """A bare number: the units it could mean, only those within ``maximum`` as fixes."""
    number = _number(value)
    written = [(f"{number}{u}", value * _UNITS[u]) for u in ("s", "m", "h", "d")]
    fits = [(text, s) for text, s in written if maximum is None or s <= maximum]
    if len(fits) == len(written):
        return f"{value} has no unit: write {', '.join(t for t, _ in fits[:-1])} or {fits[-1][0]}"
    over = " and ".join(t for t, s in written if (t, s) not in fits)
    limit = f"the most allowed here, {format_duration(maximum) if maximum is not None else ''}"
    if not fits:
        return f"{value} has no unit, and even {written[0][0]} is over {limit}"
    choices = " or ".join(t if _roughly(s) == t else f"{t} ({_roughly(s)})" for t, s in fits)
    return f"{value} has no unit: write {choices}; {over} would be over {limit}"


def _roughly(seconds: float) -> str:
    """``seconds`` in the largest unit it reaches, rounded: 3600 → ``1h``, 216000 → ``2.5d``."""
    for unit in ("d", "h", "m"):
        if seconds >= _UNITS[unit]:
            return f"{round(seconds / _UNITS[unit], 1):g}{unit}"
    return f"{seconds:g}s"


def _number(value: float) -> str:
    return str(int(value)) if float(value).is_integer() else str(value)


def _unreadable(text: str) -> str:
    spelled = _SPELLED.match(text)
    if spelled is not None:
        unit = _ALIASES.get(spelled[2].lower())
        if unit is not None:
            return f"'{text}' is not a duration here: write {spelled[1]}{unit}"
        if spelled[2].lower() in ("w", "week", "weeks"):
            days = int(float(spelled[1]) * 7)
            return f"'{text}' is not a duration here: write it in days, like {days}d"
    return (
        f"'{text}' is not a duration: write a number and a unit without a space, "
        "like 30s, 10m, 8h or 7d (units: ms, s, m, h, d)"
    )
