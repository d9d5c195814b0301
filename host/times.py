"""Times as people and other programs read them: ISO 8601 in UTC, the one format of every output.

The audit trail, the approvals API and pages, the webhook, tasks and the MCP results' own
``_meta`` all write a time with :func:`iso`; what reads one back uses :func:`parse_iso`. Inside the
host and the store, times stay Unix seconds.
"""

from __future__ import annotations

import math
import time
from datetime import UTC, datetime

__all__ = ["iso", "parse_iso"]

#: The times :func:`iso` writes without :mod:`datetime`: 1970 up to the end of 9999.
_FAST_UNTIL = 253402300800

#: The last whole second :func:`iso` wrote, and its text up to the seconds.
_last: tuple[int, str] = (-1, "")


def iso(when: float, *, ms: bool = False) -> str:
    """A Unix time as ISO 8601 in UTC: ``2026-07-28T09:30:00Z`` (``...:00.250Z`` with ``ms``).

    NOTE: the same text as ``datetime.fromtimestamp(when, UTC).strftime(...)`` (microseconds
    rounded half to even, then cut to milliseconds), made without strftime, with each second's
    text kept for the next time in it: every audit record writes one, and strftime was 4% of the
    audit writer's instructions.
    """
    if not 0 <= when < _FAST_UNTIL:
        return _iso_datetime(when, ms)
    part, whole = math.modf(when)
    second = int(whole)
    micro = round(part * 1e6)
    if micro >= 1_000_000:
        second, micro = second + 1, micro - 1_000_000
    last = _last
    text = last[1] if last[0] == second else _second(second)
    if ms:
        return f"{text}.{micro // 1000:03d}Z"
    return text + "Z"


def _second(second: int) -> str:
    """``second`` (Unix, whole) as ISO 8601 up to its seconds, kept for the next call."""
    global _last
    t = time.gmtime(second)
    text = (
        f"{t.tm_year:04d}-{t.tm_mon:02d}-{t.tm_mday:02d}"
        f"T{t.tm_hour:02d}:{t.tm_min:02d}:{t.tm_sec:02d}"
    )
    _last = (second, text)
    return text


def _iso_datetime(when: float, ms: bool) -> str:
    """:func:`iso` by :mod:`datetime`: for times before 1970 or past 9999 (those raise)."""
    moment = datetime.fromtimestamp(when, tz=UTC)
    if ms:
        return moment.strftime("%Y-%m-%dT%H:%M:%S.") + f"{moment.microsecond // 1000:03d}Z"
    return moment.strftime("%Y-%m-%dT%H:%M:%SZ")


def parse_iso(text: str) -> float:
    """The inverse of :func:`iso` (with or without ``ms``): a Unix time.

    Raises:
        ValueError: ``text`` is not such a time.
    """
    shape = "%Y-%m-%dT%H:%M:%S.%fZ" if "." in text else "%Y-%m-%dT%H:%M:%SZ"
    return datetime.strptime(text, shape).replace(tzinfo=UTC).timestamp()
