"""Approval requests: what the store keeps of one, and the steps a request goes through.

A request is made by the first call that reaches an ``approve`` step with a given *binding*
(caller, tool, arguments, answers and definition, digested by the caller of the store): later
identical calls find it by that binding. It is decided by distinct approvers (never the caller),
ends at one rejection or at its expiry, and an approved request is *spent* by exactly one call,
after which its binding is released so that the next identical call makes a new request. Every
change is a new :class:`ApprovalRequest` with a higher ``version``, written only over the version
it was made from, so two workers deciding or spending at once cannot both win.
"""

from __future__ import annotations

import json
import secrets
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any, Literal

__all__ = [
    "HISTORY_S",
    "ApprovalRequest",
    "Decision",
    "RequestStatus",
    "Verdict",
    "new_request_id",
]

RequestStatus = Literal["pending", "approved", "rejected", "expired", "voided", "withdrawn"]
"""Where a request stands: decided or not, or past deciding (expired, voided by a reload,
withdrawn by the task that made it)."""

Verdict = Literal["approve", "reject"]

#: How long a request is kept after it expires: for the history of the inbox and the audit.
HISTORY_S = 7 * 86400.0


def new_request_id() -> str:
    """A new request id: random, 96 bits, safe in a URL."""
    return "apr_" + secrets.token_urlsafe(12)


@dataclass(frozen=True)
class Decision:
    """One approver's decision: who, ``approve`` or ``reject``, why, and when (Unix time)."""

    principal: str
    verdict: Verdict
    reason: str
    at: float

    def plain(self) -> dict[str, Any]:
        """The decision as JSON-ready data."""
        return {
            "principal": self.principal,
            "verdict": self.verdict,
            "reason": self.reason,
            "at": self.at,
        }


@dataclass(frozen=True)
class ApprovalRequest:
    """One approval request as the store keeps it.

    Attributes:
        id: Its public id (:func:`new_request_id`).
        binding: The digest that identical calls share; they find the request by it.
        caller: Who made the call (never an approver of it).
        tool: The tool, with its title and the approve step's name.
        message: What approvers read, rendered.
        approvers: Scopes; an approver holds one.
        needed: How many distinct approvers must say yes.
        arguments: The call's arguments, with redacted fields as ``"[redacted]"``.
        answers: The caller's answers so far, redacted the same way.
        definition: The digest of the tool's definition the request was made under.
        state: ``pending``, ``approved`` or ``rejected`` as decided (expiry is read from time).
        decisions: Every decision, in order.
        created: When it was made; expires: when it can no longer be decided (Unix times).
        spent_by: The call its approval was spent on, once spent; else None.
        told: True once a call was told how it ended (approved and spent, rejected, expired).
        voided: True when a reload changed the tool before the request was spent.
        withdrawn: True when the caller cancelled the task that made it, before its act.
        version: Incremented by every change.
    """

    id: str
    binding: str
    caller: str
    tool: str
    step: str
    message: str
    approvers: tuple[str, ...]
    needed: int
    arguments: Mapping[str, Any]
    answers: Mapping[str, Any]
    definition: str
    created: float
    expires: float
    title: str = ""
    state: Literal["pending", "approved", "rejected"] = "pending"
    decisions: tuple[Decision, ...] = ()
    spent_by: str | None = None
    told: bool = False
    voided: bool = False
    withdrawn: bool = False
    version: int = 1
    extra: Mapping[str, Any] = field(default_factory=dict)

    def status(self, now: float) -> RequestStatus:
        """Where it stands at ``now``: a pending request past its expiry reads ``expired``."""
        if self.voided:
            return "voided"
        if self.withdrawn:
            return "withdrawn"
        if self.state == "pending" and now >= self.expires:
            return "expired"
        return self.state

    def voidable(self, now: float) -> bool:
        """Whether a reload that changes its tool voids it: pending, or approved and not spent."""
        return self.status(now) in ("pending", "approved") and self.spent_by is None

    @property
    def approved_by(self) -> tuple[str, ...]:
        """The approvers who said yes, in order."""
        return tuple(d.principal for d in self.decisions if d.verdict == "approve")

    @property
    def reason(self) -> str:
        """The deciding reason: the rejection's, else the last approval's; may be empty."""
        for decision in reversed(self.decisions):
            if decision.verdict == "reject" or self.state != "rejected":
                return decision.reason
        return ""

    def decided(self, decision: Decision) -> ApprovalRequest:
        """This request with ``decision`` added (the caller checked that it may be)."""
        decisions = (*self.decisions, decision)
        state = self.state
        if decision.verdict == "reject":
            state = "rejected"
        elif len({d.principal for d in decisions if d.verdict == "approve"}) >= self.needed:
            state = "approved"
        return replace(self, decisions=decisions, state=state, version=self.version + 1)

    def changed(self, **changes: Any) -> ApprovalRequest:
        """This request with ``changes``, one version later."""
        return replace(self, **changes, version=self.version + 1)

    def to_json(self) -> str:
        """The request as the text both backends keep."""
        data = {
            "id": self.id,
            "binding": self.binding,
            "caller": self.caller,
            "tool": self.tool,
            "step": self.step,
            "message": self.message,
            "approvers": list(self.approvers),
            "needed": self.needed,
            "arguments": self.arguments,
            "answers": self.answers,
            "definition": self.definition,
            "created": self.created,
            "expires": self.expires,
            "title": self.title,
            "state": self.state,
            "decisions": [d.plain() for d in self.decisions],
            "spent_by": self.spent_by,
            "told": self.told,
            "voided": self.voided,
            "withdrawn": self.withdrawn,
            "version": self.version,
            "extra": self.extra,
        }
        return json.dumps(data, ensure_ascii=False, default=str)

    @classmethod
    def from_json(cls, text: str) -> ApprovalRequest:
        """The inverse of :meth:`to_json`."""
        data = json.loads(text)
        data["approvers"] = tuple(data["approvers"])
        data["decisions"] = tuple(Decision(**d) for d in data["decisions"])
        return cls(**data)
