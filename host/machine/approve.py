"""The ``approve`` step: another person's yes, found through ``ctx.gate``, before the act.

An approve step is a question whose answer comes from approvers, not from the caller: the
machine hands the gate what approvers must see (the rendered message, the arguments, the
caller's answers so far) and goes on only with an ``approved`` answer, which the gate gives once
per request. ``rejected`` and ``expired`` end the call with the step's results; ``pending`` ends
it with a tool error that says how to continue, and ``_meta["host/approval"]`` for programs.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any

from host.machine.gate import ApprovalAsk, Decided
from host.machine.remember import Remember
from host.machine.shown import render_shown
from host.machine.types import CallContext, Ending, Outcome
from host.spec.templates import Renderer
from host.times import iso

__all__ = [
    "DEFAULT_APPROVE_ENDINGS",
    "ApproveStep",
    "bind_approved",
    "ended",
    "pending",
    "spent",
]

#: What a call returns when an approve step declares no ``rejected:``/``expired:`` of its own.
DEFAULT_APPROVE_ENDINGS: Mapping[str, str] = {
    "rejected": "The request ({step}) was rejected by an approver. Nothing was done.",
    "expired": "Nobody decided the request ({step}) before it expired. Nothing was done.",
}


@dataclass(frozen=True)
class ApproveStep:
    """A compiled ``approve``.

    Attributes:
        deps: Names its message and ``when`` read: it waits while any is pending.
        outputs: Names it binds (its own name).
        endings: The results for ``rejected`` and ``expired``.
    """

    name: str
    message: Renderer
    when: Renderer | None
    approvers: tuple[str, ...]
    count: int
    wait_s: float
    expires_s: float
    endings: Mapping[Ending, Renderer]
    deps: frozenset[str]
    outputs: frozenset[str]
    remember: Remember | None = None

    def ask(
        self,
        scope: Mapping[str, Any],
        inputs: Mapping[str, Any],
        answers: Mapping[str, Any],
        hidden: frozenset[str] = frozenset(),
        questions: tuple[Mapping[str, Any], ...] = (),
    ) -> ApprovalAsk:
        """What the gate needs to find or make this call's request (its message rendered with
        the ``hidden`` fields, ``audit.redact``'s, as ``[redacted]``)."""
        return ApprovalAsk(
            step=self.name,
            message=render_shown(self.message, scope, hidden),
            approvers=self.approvers,
            count=self.count,
            wait_s=self.wait_s,
            expires_s=self.expires_s,
            arguments=inputs,
            answers=answers,
            questions=questions,
        )


def bind_approved(step: ApproveStep, decided: Decided | None, scope: dict[str, Any]) -> None:
    """Bind ``NAME.approved_by``, ``NAME.reason`` and ``NAME.request`` (remembered: empty)."""
    scope[step.name] = {
        "approved_by": list(decided.approved_by) if decided else [],
        "reason": decided.reason if decided else "",
        "request": decided.request if decided else None,
        "remembered": decided is None,
    }


def ended(step: ApproveStep, decided: Decided, scope: dict[str, Any]) -> Outcome:
    """The result of a rejected or expired request: the step's own, rendered."""
    ending: Ending = "rejected" if decided.status == "rejected" else "expired"
    bind_approved(step, decided, scope)
    scope[step.name]["remembered"] = False
    outcome = Outcome.from_value(step.endings[ending](scope))
    return replace(outcome, ending=ending, approval=decided)


def pending(tool: str, decided: Decided, ctx: CallContext) -> Outcome:
    """The tool error of a request still undecided when the call stopped waiting."""
    when = time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime(decided.expires))
    who = " or ".join(decided.approvers) or "an approver"
    left = decided.needed - len(decided.approved_by)
    text = (
        f"Approval is pending: request {decided.request} needs {left} more approval"
        f"{'s' if left != 1 else ''} from someone holding {who} (not {ctx.principal}), "
        f"and expires at {when}. Nothing was done yet. Call {tool} again with the same "
        "arguments to continue it: once approved, that call goes on."
    )
    meta = {
        "host/approval": {
            "request": decided.request,
            "status": "pending",
            "needed": decided.needed,
            "expires": iso(decided.expires),
        }
    }
    return replace(Outcome.error(text), approval=decided, meta=meta)


def spent(tool: str, decided: Decided) -> Outcome:
    """The tool error of a call whose approval went to another identical call, which acted."""
    text = (
        f"Request {decided.request} was approved, and its one action went to another identical "
        f"call of {tool}, made at the same time. Nothing more was done. Call {tool} again to "
        "make a new request if it must run again."
    )
    meta = {
        "host/approval": {
            "request": decided.request,
            "status": "spent",
            "needed": decided.needed,
            "expires": iso(decided.expires),
        }
    }
    return replace(Outcome.error(text), approval=decided, meta=meta)
