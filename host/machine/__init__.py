"""The machine layer: a compiled tool, ``run(arguments, answers, ctx)`` → NeedInput | Outcome.

Pure except for the act, which it enters only when every question is answered and accepted.
"""

from host.machine.compile import compile_project
from host.machine.run import Machine
from host.machine.types import (
    Answer,
    AnswerMismatch,
    CallContext,
    NeedInput,
    Once,
    Outcome,
    ProgressSink,
    Question,
)

__all__ = [
    "Answer",
    "AnswerMismatch",
    "CallContext",
    "Machine",
    "NeedInput",
    "Once",
    "Outcome",
    "ProgressSink",
    "Question",
    "compile_project",
]
