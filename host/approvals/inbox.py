"""What approvers see of one approval request: :class:`InboxRequest`, already redacted."""

from __future__ import annotations

import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from host.store.bounded import is_bounded
from host.store.records import iso
from host.store.requests import ApprovalRequest, Decision, RequestStatus

__all__ = ["Decision", "InboxRequest"]


@dataclass(frozen=True)
class InboxRequest:
    """One approval request, as the inbox, the API and the command line show it.

    Attributes:
        arguments: The call's arguments; ``audit.redact`` fields read ``"[redacted]"``, and one
            over ``HOST_RECORD_MAX`` is ``{"bounded": {"sha256", "bytes", "prefix"}}``.
        answers: The caller's answers so far, redacted the same way.
        status: ``pending``, ``approved``, ``rejected``, ``expired`` or ``voided``.
        needed: How many distinct approvers must say yes; approved_by: who did.
        created, expires: Unix times.
        questions: The caller's questions as the caller saw them (rendered, redacted):
            ``{name, kind, message, action, fields: [{name, label, value}]}``.
        outcome: What became of the call once decided: ``acted``, ``failed``, ``busy``,
            ``expired``, ``rejected``, ``cancelled`` (voided: it will not act) or ``running``
            (approved, its call not finished); None while pending.
    """

    id: str
    tool: str
    title: str
    caller: str
    message: str
    arguments: Mapping[str, Any]
    answers: Mapping[str, Any]
    status: RequestStatus
    needed: int
    approved_by: tuple[str, ...]
    decisions: tuple[Decision, ...]
    created: float
    expires: float
    approvers: tuple[str, ...] = ()
    questions: tuple[Mapping[str, Any], ...] = ()
    outcome: str | None = None

    @classmethod
    def of(cls, request: ApprovalRequest, status: RequestStatus | None = None) -> InboxRequest:
        """The inbox's view of a stored request (its status as of now, unless given)."""
        status = status or request.status(time.time())
        questions = request.extra.get("questions")
        return cls(
            id=request.id,
            tool=request.tool,
            title=request.title or request.tool,
            caller=request.caller,
            message=request.message,
            arguments=request.arguments,
            answers=request.answers,
            status=status,
            needed=request.needed,
            approved_by=request.approved_by,
            decisions=request.decisions,
            created=request.created,
            expires=request.expires,
            approvers=request.approvers,
            questions=tuple(questions) if isinstance(questions, list) else (),
            outcome=_outcome(request, status),
        )

    @property
    def cut(self) -> tuple[str, ...]:
        """The arguments kept as digest, size and prefix (``*``: all of them, as one)."""
        if is_bounded(self.arguments):
            return ("*",)
        return tuple(name for name, value in self.arguments.items() if is_bounded(value))

    def plain(self) -> dict[str, Any]:
        """The request as the API sends it (times in ISO 8601 UTC)."""
        return {
            "id": self.id,
            "tool": self.tool,
            "title": self.title,
            "caller": self.caller,
            "message": self.message,
            "arguments": dict(self.arguments),
            "cut": list(self.cut),
            "answers": dict(self.answers),
            "status": self.status,
            "approvers": list(self.approvers),
            "approved_by": list(self.approved_by),
            "needed": self.needed,
            "questions": [dict(q) for q in self.questions],
            "outcome": self.outcome,
            "decisions": [
                {
                    "principal": d.principal,
                    "verdict": d.verdict,
                    "reason": d.reason,
                    "time": iso(d.at, ms=True),
                }
                for d in self.decisions
            ],
            "created": iso(self.created, ms=True),
            "expires": iso(self.expires, ms=True),
        }


def _outcome(request: ApprovalRequest, status: RequestStatus) -> str | None:
    """What became of the call: the status's own word, or the approved call's noted outcome."""
    if status == "pending":
        return None
    if status == "approved":
        noted = request.extra.get("outcome")
        return noted if isinstance(noted, str) else "running"
    return {"voided": "cancelled", "withdrawn": "cancelled"}.get(status, status)
