"""The machine layer: a compiled tool, ``run(arguments, answers, ctx)`` → NeedInput | Outcome.

Pure except for the act, which it enters only when every question is answered and accepted.
"""

from host.errors import AnswerMismatch
from host.machine.compile import compile_project
from host.machine.gate import NO_GATE, ApprovalAsk, Decided, Gate
from host.machine.run import Machine
from host.machine.types import (
    NO_APPROVALS,
    Answer,
    Answers,
    Approvals,
    Approved,
    CallContext,
    Ending,
    NeedInput,
    Once,
    Outcome,
    ProgressSink,
    Question,
    act_directly,
    given,
)

__all__ = [
    "NO_APPROVALS",
    "NO_GATE",
    "Answer",
    "AnswerMismatch",
    "Answers",
    "ApprovalAsk",
    "Approvals",
    "Approved",
    "CallContext",
    "Decided",
    "Ending",
    "Gate",
    "Machine",
    "NeedInput",
    "Once",
    "Outcome",
    "ProgressSink",
    "Question",
    "act_directly",
    "compile_project",
    "given",
]
