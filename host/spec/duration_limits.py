"""Where a spec writes durations, and how long each may be: the one table the checks read.

The schema pass (a duration written as a bare number, say) and the duration rule (``0s``, or past
the longest) both ask here, so a fix they suggest is always a value that key accepts: an approve's
``wait: 120`` is told ``120s (2m)``, not ``120h``, since a call never waits past its request's
``expires``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from host.spec.durations import DurationError, parse_duration
from host.spec.model import (
    APPROVE_EXPIRES_MAX_S,
    LOCK_WAIT_MAX_S,
    REMEMBER_MAX_S,
    URL_WAIT_MAX_S,
    Approve,
)
from host.spec.yaml import YPath

__all__ = ["Limit", "limit_at"]

#: An approve's ``expires`` when it writes none (the model's default).
_EXPIRES_DEFAULT_S = Approve("", "", ()).expires_s


@dataclass(frozen=True)
class Limit:
    """How long a duration at one place may be.

    Attributes:
        longest: The most allowed, in seconds (None: no limit).
        zero: Whether ``0s`` is allowed there (not waiting at all).
        bound_by: What sets ``longest`` when another key of the step does (``expires``).
    """

    longest: float | None
    zero: bool = False
    bound_by: str = ""


def limit_at(path: YPath, data: Any) -> Limit | None:
    """The limit of the duration at ``path`` in a document's data; None where none is written."""
    if len(path) == 2 and path[0] == "timeouts":
        return Limit(None)
    if len(path) < 3 or path[0] != "steps":
        return None
    steps = data.get("steps") if isinstance(data, dict) else None
    index = path[1]
    step: Any = {}
    if isinstance(steps, list) and isinstance(index, int) and 0 <= index < len(steps):
        step = steps[index] if isinstance(steps[index], dict) else {}
    key = path[2:]
    if key == ("timeout",):
        return Limit(None)
    if key == ("remember", "for"):
        return Limit(REMEMBER_MAX_S)
    if key == ("lock_wait",):
        return Limit(LOCK_WAIT_MAX_S, zero=True)
    if key == ("expires",):
        return Limit(APPROVE_EXPIRES_MAX_S)
    if key == ("wait",):
        if "approve" not in step:
            return Limit(URL_WAIT_MAX_S, zero=True)
        return Limit(_expires(step.get("expires")), zero=True, bound_by="expires")
    return None


def _expires(written: Any) -> float:
    """How long the step's request lasts: its ``expires``, its default, or the most allowed."""
    if written is None:
        return _EXPIRES_DEFAULT_S
    try:
        return parse_duration(written, maximum=APPROVE_EXPIRES_MAX_S)
    except DurationError:
        return APPROVE_EXPIRES_MAX_S  # NOTE: reported at expires: itself
