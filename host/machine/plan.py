"""A dry run of a tool call: the rounds of questions it would ask and the act it would reach.

The plan drives the real machine (``Machine.run``), so it shows exactly what a call would do, with
two changes that keep it harmless: the act is never run (the call context's ``once`` notes that
the act was reached and returns without calling it, and the act handler itself is swapped for one
that refuses to run), and each question is answered as the caller says or, by default, accepted
with a plausible value, so that the next round can be shown. Reads run for real: they are
side-effect free by the spec language's contract.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from copy import copy
from dataclasses import dataclass, field, replace
from typing import Any

from host.errors import AnswerMismatch
from host.machine.approve import ApproveStep
from host.machine.bind import Handler
from host.machine.gate import ApprovalAsk, Decided
from host.machine.pages import PageAsk, Ticket
from host.machine.run import Machine
from host.machine.steps import QuestionStep, ReadStep
from host.machine.types import Answer, CallContext, Outcome, Question, given
from host.machine.url_ask import UrlAskStep

__all__ = ["Plan", "PlannedRound", "assumed_answer", "mismatch_text", "plan_call"]

MAX_ROUNDS = 20


@dataclass
class PlannedRound:
    """One round of the call.

    Attributes:
        reads: The reads that ran, in order, with what they returned.
        skipped: The questions whose ``when:`` was false.
        questions: The questions this round asks.
        approvals: The approve steps the round reached: ``(name, message, approvers, count)``;
            the plan assumes each approved.
        answers: The answer used for each of them (``assumed`` says which were made up).
    """

    number: int
    reads: list[tuple[str, Any]] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)
    questions: list[Question] = field(default_factory=list)
    answers: dict[str, Answer] = field(default_factory=dict)
    assumed: set[str] = field(default_factory=set)
    approvals: list[ApprovalAsk] = field(default_factory=list)


@dataclass
class Plan:
    """What a call would do.

    Attributes:
        acts: True when the call reaches its act (which the plan did not run).
        act: The act's handler, ``module:function``, and the parameters it would be given.
        outcome: How the call ends without acting (a declined result, a tool error), else None.
        failure: A read or template that failed, as text (the call would end with an incident).
        read_only: The tool has no act: its ``outcome`` is the result a call returns (a plan
            may show it, since nothing acts).
    """

    tool: str
    arguments: dict[str, Any]
    rounds: list[PlannedRound] = field(default_factory=list)
    acts: bool = False
    act: str = ""
    act_parameters: tuple[str, ...] = ()
    outcome: Outcome | None = None
    failure: str | None = None
    read_only: bool = False


class _ActRefused(Exception):
    """Raised by the stand-in act: a plan never runs the real one."""


def plan_call(
    machine: Machine,
    arguments: Mapping[str, Any],
    ctx: CallContext,
    answers: Mapping[str, Answer] | None = None,
) -> Plan:
    """Plan one call of ``machine`` with ``arguments``, round by round, without acting.

    Args:
        answers: Answers to use, by question name; a question without one is accepted with
            :func:`assumed_answer`.
    """
    chosen = dict(answers or {})
    plan = Plan(machine.name, dict(arguments), read_only=machine.act is None)
    if machine.act is not None:
        plan.act = machine.act.call
        plan.act_parameters = tuple(
            p for p in (*machine.act.required, *machine.act.optional) if p != "ctx"
        )
    invalid = machine.check_arguments(arguments)
    if invalid is not None:
        plan.outcome = invalid
        return plan
    known: dict[str, Answer] = {}
    pages = _PlanPages()
    for number in range(1, MAX_ROUNDS + 1):
        current = PlannedRound(number)
        plan.rounds.append(current)
        reached: list[bool] = []
        dry = _dry(machine, current)
        with _failures() as failures:
            try:
                result = dry.run(
                    arguments, given(known), _context(ctx, number, reached, current, pages)
                )
            except AnswerMismatch as exc:
                plan.failure = mismatch_text(exc)
                return plan
        if failures:
            plan.failure = failures[0]
        if reached:
            plan.acts = True
            return plan
        if isinstance(result, Outcome):
            plan.outcome = result
            return plan
        for question in result.questions:
            answer = chosen.get(question.key)
            if answer is None:
                answer = assumed_answer(question.schema)
                current.assumed.add(question.key)
            current.questions.append(question)
            current.answers[question.key] = answer
            known[question.key] = answer
    return plan


def _context(
    ctx: CallContext,
    number: int,
    reached: list[bool],
    plan_round: PlannedRound,
    pages: _PlanPages,
) -> CallContext:
    def once(act: Callable[[], Outcome]) -> Outcome:
        # NOTE: the whole point of a plan: note that the act was reached, never call it.
        reached.append(True)
        return Outcome.from_value("(the act would run here)")

    return replace(ctx, round=number, once=once, gate=_PlanGate(plan_round), url_asks=pages)


class _PlanPages:
    """A URL ask's page in a plan: never opened; once consented to, assumed submitted with a
    placeholder of each field's type (what is typed there is never known to a plan)."""

    _PLACEHOLDERS: Mapping[str, Any] = {"integer": 0, "number": 0, "boolean": False, "array": []}

    def __init__(self) -> None:
        self.values: dict[str, dict[str, Any]] = {}
        self.rounds: dict[str, int] = {}

    def open(self, ask: PageAsk) -> Ticket:
        self.rounds[ask.step] = self.rounds.get(ask.step, 0) + 1
        self.values[ask.step] = {
            name: self._PLACEHOLDERS.get(str(field.get("type")), "(typed on the page)")
            for name, field in ask.schema["properties"].items()
        }
        return Ticket(ask.step, f"(the host's page for {ask.step})", "(planned)")

    def submitted(self, ticket: Ticket, wait_s: float) -> Mapping[str, Any] | None:
        # NOTE: asked in one round, consented to in the next: submitted by then.
        return self.values.get(ticket.id) if self.rounds.get(ticket.id, 0) > 1 else None


class _PlanGate:
    """Notes each approval the call would wait for, and assumes it given."""

    def __init__(self, current: PlannedRound) -> None:
        self.current = current

    def decide(self, ask: ApprovalAsk) -> Decided:
        self.current.approvals.append(ask)
        return Decided("approved", "(planned)", ask.count, 0.0, ask.approvers)


def _dry(machine: Machine, current: PlannedRound) -> Machine:
    """A copy of ``machine`` that records reads and skipped questions and cannot act."""
    steps: list[ReadStep | QuestionStep | ApproveStep | UrlAskStep] = []
    for step in machine.steps:
        if isinstance(step, ReadStep):
            steps.append(replace(step, handler=_recording(step, current)))
        elif step.when is not None:
            steps.append(replace(step, when=_watching(step, current)))
        else:
            steps.append(step)
    dry = copy(machine)
    dry.steps = tuple(steps)
    if machine.act is not None:
        dry.act = Handler(machine.act.call, _refuse, (), ())
    return dry


def _recording(step: ReadStep, current: PlannedRound) -> Handler:
    function = step.handler.function

    def read(**kwargs: Any) -> Any:
        value = function(**kwargs)
        current.reads.append((step.name, value))
        return value

    return replace(step.handler, function=read)


def _watching(
    step: QuestionStep | ApproveStep | UrlAskStep, current: PlannedRound
) -> Callable[[Mapping[str, Any]], Any]:
    when = step.when
    assert when is not None

    def decide(scope: Mapping[str, Any]) -> Any:
        asked = when(scope)
        if not asked:
            current.skipped.append(step.name)
        return asked

    return decide


def _refuse(**kwargs: Any) -> Any:
    raise _ActRefused("a plan never runs the act")


@contextmanager
def _failures() -> Iterator[list[str]]:
    """Collects what the machine logs about a failing read or template, instead of a traceback."""
    found: list[str] = []
    logger = logging.getLogger("host.machine")
    handler = _Collect(found)
    logger.addHandler(handler)
    propagate, logger.propagate = logger.propagate, False
    try:
        yield found
    finally:
        logger.removeHandler(handler)
        logger.propagate = propagate


class _Collect(logging.Handler):
    def __init__(self, found: list[str]) -> None:
        super().__init__(logging.ERROR)
        self.found = found

    def emit(self, record: logging.LogRecord) -> None:
        exc = record.exc_info[1] if record.exc_info else None
        self.found.append(f"{type(exc).__name__}: {exc}" if exc else record.getMessage())


def assumed_answer(schema: Mapping[str, Any]) -> dict[str, Any]:
    """An accepted answer with a plausible value for every field the form requires."""
    required = set(schema.get("required") or ())
    content: dict[str, Any] = {}
    for name, field_schema in (schema.get("properties") or {}).items():
        if "default" in field_schema:
            content[name] = field_schema["default"]
        elif name in required:
            content[name] = _value(field_schema)
    return {"action": "accept", "content": content}


_FORMATS = {
    "email": "someone@example.com",
    "uri": "https://example.com/",
    "date": "2026-01-01",
    "date-time": "2026-01-01T09:00:00Z",
}


def _value(schema: Mapping[str, Any]) -> Any:
    kind = schema.get("type")
    if kind == "boolean":
        return True
    if kind in ("number", "integer"):
        low = schema.get("minimum", 1)
        high = schema.get("maximum", low)
        return max(low, min(1, high)) if kind == "number" else int(max(low, min(1, high)))
    if kind == "array":
        items = schema.get("items") or {}
        options = items.get("enum") or [o.get("const") for o in items.get("anyOf") or []]
        return list(options[: max(int(schema.get("minItems", 1)), 1)])
    options = schema.get("enum") or [o.get("const") for o in schema.get("oneOf") or []]
    if options:
        return options[0]
    text = _FORMATS.get(str(schema.get("format")), "example")
    return text.ljust(int(schema.get("minLength", 0)), "x")


def mismatch_text(exc: AnswerMismatch) -> str:
    """An answer given with ``--answer`` that does not fit its form, as one line."""
    problems = "; ".join(f"{e['field'] or 'content'}: {e['message']}" for e in exc.errors)
    return f"the answer to '{exc.key}' does not fit its form: {problems}"
