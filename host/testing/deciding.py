"""How a test decides approval requests: ``on_approval``'s and ``approvals=``'s values, read once.

A test decides with a verdict (``"approve"`` or ``"reject"``), a mapping ``{"decision", "by",
"reason"}``, a mapping from approve step name to either of those (as ``answers=`` maps question
names), or a function of the request (the API's request object, plus its ``step``) that returns
any of these, or None to leave the request pending. ``by`` is one principal or a list of them,
each deciding in turn (``count: 2`` needs two).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

__all__ = ["DEFAULT_APPROVER", "Decider", "Decisions", "Verdict"]

#: Who decides when a test names nobody: a principal holding every approver scope the specs name.
DEFAULT_APPROVER = "approver"

_VERDICTS = ("approve", "reject")

Decisions = str | Mapping[str, Any] | Callable[[Mapping[str, Any]], Any]
"""What a test decides approval requests with (see the module's summary)."""


@dataclass(frozen=True)
class Verdict:
    """One person's decision on one request."""

    decision: str
    by: str
    reason: str = ""


class Decider:
    """Turns a test's :data:`Decisions` into the verdicts for one request.

    Args:
        decisions: What the test decides with.
        by: Who decides where ``decisions`` names nobody.
        reason: The reason given where ``decisions`` gives none.

    Raises:
        ValueError: ``decisions`` is none of the forms a test may use.
    """

    def __init__(
        self, decisions: Decisions, *, by: str | Sequence[str] = DEFAULT_APPROVER, reason: str = ""
    ) -> None:
        if not (callable(decisions) or isinstance(decisions, str | Mapping)):
            raise ValueError(_usage(decisions))
        if isinstance(decisions, str):
            _verdict_word(decisions)
        self.decisions = decisions
        self.by = by
        self.reason = reason

    def verdicts(self, request: Mapping[str, Any]) -> list[Verdict] | None:
        """The verdicts for ``request``, in order; None leaves it pending.

        Raises:
            ValueError: The test's value for this request is unreadable.
        """
        given: Any = self.decisions
        if callable(given):
            given = given(request)
        elif isinstance(given, Mapping) and "decision" not in given:
            step = str(request.get("step", ""))
            if step not in given:
                return None  # NOTE: a step the test does not decide stays pending
            given = given[step]
        if given is None:
            return None
        return self._read(given)

    def _read(self, given: Any) -> list[Verdict]:
        if isinstance(given, str):
            decision, by, reason = _verdict_word(given), self.by, self.reason
        elif isinstance(given, Mapping):
            unknown = sorted(set(given) - {"decision", "by", "reason"})
            if unknown:
                raise ValueError(
                    f"a decision has the keys decision, by and reason; not {', '.join(unknown)}"
                )
            decision = _verdict_word(given.get("decision"))
            by = given.get("by") or self.by
            reason = str(given.get("reason") if given.get("reason") is not None else self.reason)
        else:
            raise ValueError(_usage(given))
        people = [by] if isinstance(by, str) else list(by)
        if not people or not all(isinstance(p, str) and p for p in people):
            raise ValueError(f"by names who decides: a principal or a list of them, not {by!r}")
        return [Verdict(decision, person, reason) for person in people]


def _verdict_word(word: Any) -> str:
    if word not in _VERDICTS:
        raise ValueError(f"a decision is 'approve' or 'reject', not {word!r}")
    return str(word)


def _usage(given: Any) -> str:
    return (
        "decide approval requests with 'approve', 'reject', "
        '{"decision": "approve", "by": "carol", "reason": "..."}, a mapping from approve step '
        f"name to one of those, or a function of the request; got {given!r}"
    )
