"""What an ``approve`` step asks of the host, and what it hears back: the approvals gate.

The machine never sees the store: the protocol layer hands it a :class:`Gate` in ``ctx`` (as it
does remembered approvals), bound to the caller, the tool, its definition and the call. The gate
finds or makes the approval request, waits for its decision up to the step's ``wait``, and says
where it stands. An ``approved`` answer is given once per request: the gate spends it for this
call, so no second act can ride on the same approval.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol

from host.errors import ToolError

__all__ = ["NO_GATE", "ApprovalAsk", "Decided", "Gate", "Status"]

Status = Literal["approved", "rejected", "expired", "pending", "spent"]
"""Where an approval request stands for the call that asked (``spent``: approved, and its one
act went to another identical call)."""


@dataclass(frozen=True)
class ApprovalAsk:
    """One ``approve`` step as a call reaches it.

    Attributes:
        step: The step's name.
        message: The rendered message approvers read.
        approvers: Scopes; an approver holds one of them.
        count: How many distinct approvers must say yes.
        wait_s: How long this call waits for the decision.
        expires_s: How long the request can be decided.
        arguments: The call's inputs (defaults filled in).
        answers: The caller's answers so far, by question: ``{action, content}``.
        questions: Those questions as the caller saw them: ``{name, kind, message, action,
            fields: [{name, label, value}]}``, rendered for approvers (redacted).
    """

    step: str
    message: str
    approvers: tuple[str, ...]
    count: int
    wait_s: float
    expires_s: float
    arguments: Mapping[str, Any]
    answers: Mapping[str, Any] = field(default_factory=dict)
    questions: tuple[Mapping[str, Any], ...] = ()


@dataclass(frozen=True)
class Decided:
    """Where the request stands once the call stopped waiting.

    Attributes:
        status: ``approved`` (spent for this call), ``rejected``, ``expired``, ``pending``, or
            ``spent`` (by another call).
        request: The request's id.
        needed: How many approvals it needs in all.
        expires: When it can no longer be decided (Unix time).
        approvers: The scopes that may decide it.
        approved_by: Who approved it so far.
        reason: The deciding reason (the rejection's, or the last approval's); may be empty.
        decisions: Every decision: ``{principal, verdict, reason, at}``.
    """

    status: Status
    request: str
    needed: int
    expires: float
    approvers: tuple[str, ...] = ()
    approved_by: tuple[str, ...] = ()
    reason: str = ""
    decisions: tuple[Mapping[str, Any], ...] = ()


class Gate(Protocol):
    """Finds or makes a call's approval request and waits for its decision."""

    def decide(self, ask: ApprovalAsk) -> Decided:
        """Where the request for ``ask`` stands, after waiting up to ``ask.wait_s``."""
        ...


class _NoGate:
    """Nowhere to ask: a call that needs another person's yes cannot go on."""

    def decide(self, ask: ApprovalAsk) -> Decided:
        raise ToolError(
            f"The step {ask.step} needs another person's approval, and this host has no "
            "store to ask for one. Nothing was done."
        )


NO_GATE: Gate = _NoGate()
"""The gate of a call with nowhere to ask (tests of the machine alone)."""
