"""Times as people and other programs read them: ISO 8601 in UTC, the one format of every output.

The audit trail, the approvals API and pages, the webhook, tasks and the MCP results' own
``_meta`` all write a time with :func:`iso`; what reads one back uses :func:`parse_iso`. Inside the
host and the store, times stay Unix seconds.
"""

from __future__ import annotations

from datetime import UTC, datetime

__all__ = ["iso", "parse_iso"]


def iso(when: float, *, ms: bool = False) -> str:
    """A Unix time as ISO 8601 in UTC: ``2026-07-28T09:30:00Z`` (``...:00.250Z`` with ``ms``)."""
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
