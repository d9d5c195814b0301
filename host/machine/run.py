"""A compiled tool and its run loop: reads, then questions, then (all accepted) the act.

The loop is the whole guarantee of the product. Each round starts from the top: reads run again,
questions answered in earlier rounds take their recorded answers, and the first questions still
unanswered are returned together. The act is reached only when no question is pending, and then
only through ``ctx.once``, so retries of the final round never act twice.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from typing import Any

from host.errors import AnswerMismatch, ProtocolError, StoreError, ToolError
from host.machine.approve import ApproveStep, bind_approved, ended, pending, spent
from host.machine.bind import Handler
from host.machine.gate import Decided
from host.machine.handling import Handling
from host.machine.locking import LockStep, locked
from host.machine.remember import Approving
from host.machine.schemas import SchemaCheck, error_message
from host.machine.shown import questions_shown
from host.machine.steps import QuestionStep, ReadStep
from host.machine.timing import DEFAULT_ACT_S
from host.machine.types import (
    Answer,
    Answers,
    CallContext,
    Ending,
    NeedInput,
    Outcome,
    Question,
)
from host.machine.url_ask import UrlAskStep
from host.spec import memo
from host.spec.model import Returns
from host.spec.templates import Renderer

__all__ = ["Machine"]


class Machine(Handling):
    """One compiled tool, ready for tools/list and tools/call.

    Attributes:
        asks: True when some step can ask the user a question.
        remembers: True when some confirm or approve remembers a yes (``remember:``).
        approves: True when some step asks another person's approval (``approve``).
        asks_on_pages: True when some step asks on a host page (``ask`` with ``mode: url``).
        signs_in: True when some step needs a person to sign in to the host's pages.
        definition: The tool's definition as text (:mod:`host.machine.definition`).
        scopes: Every scope a caller needs to call it (the server's and the tool's own).
        act_timeout_s: How long a caller waits for the act; past it the act goes on running.
        audit_redact: Input and form fields the audit trail stores as ``"[redacted]"``.
        read_only: True for a tool without an act: its result is its ``result:`` template
            (``result``) or the value of its last read (``last_read``); nothing is claimed.
        definition: The digest of the tool's definition
            (:func:`host.machine.definition.definition_digest`): what a call's records between
            rounds are bound to.
        lock: The act's ``lock:``, when it has one: taken before the act's claim.
        task: How a call may run as an MCP task: ``required``, ``optional`` or ``never``.
    """

    def __init__(
        self,
        *,
        name: str,
        description: str,
        input_schema: dict[str, Any],
        steps: tuple[ReadStep | QuestionStep | ApproveStep | UrlAskStep, ...],
        act: Handler | None,
        title: str | None = None,
        output_schema: dict[str, Any] | None = None,
        annotations: dict[str, Any] | None = None,
        returns: Returns = "value",
        scopes: frozenset[str] = frozenset(),
        act_timeout_s: float = DEFAULT_ACT_S,
        audit_redact: frozenset[str] = frozenset(),
        result: Renderer | None = None,
        last_read: str | None = None,
        definition: str = "",
        lock: LockStep | None = None,
        task: str = "never",
    ) -> None:
        self.name = name
        self.task = task
        self.lock = lock
        self.read_only = act is None
        self._result = result
        self._last_read = last_read
        self.definition = definition
        self.scopes = scopes
        self.act_timeout_s = act_timeout_s
        # NOTE: whatever a URL ask's page received is never shown: every field is redacted.
        self.audit_redact = memo.one(
            audit_redact
            | frozenset(f for s in steps if isinstance(s, UrlAskStep) for f in s.fields)
        )
        self.title = title
        self.description = description
        self.input_schema = input_schema
        self.output_schema = output_schema
        self._output = SchemaCheck(output_schema) if output_schema is not None else None
        self.annotations = dict(annotations or {})
        self.steps = steps
        self.act = act
        self.returns = returns
        self.asks = any(isinstance(s, QuestionStep | UrlAskStep) for s in steps)
        self.asks_on_pages = any(isinstance(s, UrlAskStep) for s in steps)
        self.signs_in = self.asks_on_pages or any(isinstance(s, ApproveStep) for s in steps)
        self.remembers = any(
            isinstance(s, QuestionStep | ApproveStep) and s.remember for s in steps
        )
        self.approves = any(isinstance(s, ApproveStep) for s in steps)
        self._form_fields = {
            s.name: memo.one(frozenset(s.form.schema["properties"]))
            for s in steps
            if isinstance(s, QuestionStep)
        }
        self._validator = SchemaCheck(input_schema)
        self._fields = memo.one(frozenset(input_schema.get("properties", {})))
        self._defaults = _defaults_of(input_schema)
        self._described = self._describe()

    def _describe(self) -> dict[str, Any]:
        tool: dict[str, Any] = {"name": self.name}
        if self.title:
            tool["title"] = self.title
        tool["description"] = self.description
        # NOTE: `properties` even when empty: clients index it without a check (mcpadapt's
        # smolagents tools fail with KeyError on a schema without it).
        tool["inputSchema"] = {"type": "object", "properties": {}, **self.input_schema}
        if self.output_schema is not None:
            tool["outputSchema"] = self.output_schema
        if self.annotations:
            tool["annotations"] = self.annotations
        return tool

    def describe(self) -> dict[str, Any]:
        """The MCP ``Tool`` object for tools/list (built once)."""
        return self._described

    def page_wait(self, key: str) -> float:
        """How long a URL ask ``key`` waits for its page to be submitted (0: no such ask)."""
        step = next((s for s in self.steps if isinstance(s, UrlAskStep) and s.name == key), None)
        return step.wait_s if step is not None else 0.0

    def form_fields(self, key: str) -> frozenset[str]:
        """The fields the question ``key`` asks for (none when it asks nothing by that key)."""
        return self._form_fields.get(key, frozenset())

    def check_arguments(self, arguments: Mapping[str, Any]) -> Outcome | None:
        """An ``isError`` outcome saying what to fix, or None when the arguments are valid."""
        if self._validator.passes(arguments):
            return None  # NOTE: valid, as most are: no copy to check, no errors to sort
        errors = sorted(self._validator.errors(dict(arguments)), key=lambda e: e.path)
        if not errors:
            return None
        lines = []
        for error in errors:
            where = "/".join(str(p) for p in error.absolute_path)
            message = error_message(error, self.audit_redact)
            lines.append(f"- {where}: {message}" if where else f"- {message}")
        return Outcome.error(
            f"Invalid arguments for tool {self.name}:\n"
            + "\n".join(lines)
            + "\nFix the arguments and call the tool again."
        )

    def arguments(self, arguments: Mapping[str, Any]) -> dict[str, Any]:
        """The call's inputs as the tool sees them: its own fields, defaults filled in."""
        scope: dict[str, Any] = dict(self._defaults)
        if arguments:
            fields = self._fields
            scope.update({k: v for k, v in arguments.items() if k in fields})
        return scope

    def run(
        self, arguments: Mapping[str, Any], answers: Answers, ctx: CallContext
    ) -> NeedInput | Outcome:
        """Run one round.

        Args:
            arguments: The call's arguments, already checked with :meth:`check_arguments`.
            answers: The answers that count: each question, as it reads in this round, is
                looked up there, and asked when it has none.
            ctx: The call context; ``ctx.once`` guards the act.

        Raises:
            AnswerMismatch: an accepted answer does not fit its form.
            StoreError: ``ctx.once`` could not claim the act, or ``ctx.locks`` take its lock (the
                store is down or refuses writes): no handler failed and nothing was done, so it
                is not an incident here.
            ProtocolError: ``ctx.gate`` refused the call (a per-caller limit).
        """
        scope = self.arguments(arguments)
        try:
            return self._run(scope, answers, ctx)
        except (AnswerMismatch, StoreError, ProtocolError):
            raise
        except ToolError as exc:
            return Outcome.error(exc.message)
        except Exception:
            return self._incident(ctx, scope)

    def _run(
        self, scope: dict[str, Any], answers: Answers, ctx: CallContext
    ) -> NeedInput | Outcome:
        blocked: set[str] = set()
        pending: list[Question] = []
        # NOTE: the inputs as called are copied only for a tool with a default approval key, or
        # one whose approvers see them.
        inputs = dict(scope) if self.remembers or self.signs_in else scope
        approving = Approving(ctx, inputs)
        approval: Decided | None = None
        scope.setdefault("caller", ctx.principal)
        for step in self.steps:
            if blocked and not step.deps.isdisjoint(blocked):
                blocked |= {step.name} if isinstance(step, ReadStep) else step.outputs
                continue
            if isinstance(step, ApproveStep):
                if pending:  # NOTE: approvers decide on the whole request, every answer in it
                    blocked |= step.outputs
                    continue
                passed = self._approve(step, scope, inputs, approving, ctx)
                if isinstance(passed, Outcome):
                    return replace(passed, approvals=approving.used)
                approval = passed or approval
                continue
            if isinstance(step, ReadStep):
                value = self._read(step, scope, ctx)
                if value is None and step.missing is not None:
                    return Outcome.error(str(step.missing(scope)))
                scope[step.name] = value
                continue
            if step.when is not None and not step.when(scope):
                continue
            if isinstance(step, UrlAskStep):
                asked = self._url_ask(step, scope, inputs, answers, ctx, bool(pending))
                if isinstance(asked, Outcome):
                    return replace(asked, approvals=approving.used)
                if asked is not None:
                    pending.append(asked)
                    blocked |= step.outputs
                continue
            question = Question(step.name, str(step.message(scope)), step.form.render(scope))
            answer = answers.answer_for(question)
            key = approving.key(step.remember, scope)
            if answer is None and approving.remembered(step.name, step.remember, key, scope):
                continue
            if answer is None:
                pending.append(question)
                blocked |= step.outputs
                continue
            ending = self._apply(step, question.schema, answer, scope)
            if ending is not None:
                outcome = Outcome.from_value(step.endings[ending](scope))
                return replace(outcome, ending=ending, approvals=approving.used)
            if step.confirm:
                approving.ticked(step.name, step.remember, key)
        if pending:
            return NeedInput(tuple(pending))
        return self._finish(scope, ctx, approving, approval)

    def _finish(
        self,
        scope: dict[str, Any],
        ctx: CallContext,
        approving: Approving,
        approval: Decided | None,
    ) -> Outcome:
        """Every question answered: keep the yeses to remember, then act (or read) once."""
        used = approving.keep()
        act = self.act
        if act is None:
            outcome = self._read_result(scope, ctx)
        elif self.lock is not None:
            outcome = locked(self.lock, self.name, scope, ctx, lambda: self._act(scope, ctx, act))
        else:
            outcome = ctx.once(lambda: self._act(scope, ctx, act))
        if approval is None and not used:
            return outcome
        return outcome.went_past(
            used or outcome.approvals, outcome.approval if approval is None else approval
        )

    def _read_result(self, scope: Mapping[str, Any], ctx: CallContext) -> Outcome:
        """A read-only tool's result: no act, so no claim (nothing to run twice)."""
        if self._result is not None:
            value = self._result(scope)
        else:
            value = scope.get(self._last_read) if self._last_read is not None else None
        return self._checked(Outcome.from_value(value), ctx, scope)

    def _approve(
        self,
        step: ApproveStep,
        scope: dict[str, Any],
        inputs: Mapping[str, Any],
        approving: Approving,
        ctx: CallContext,
    ) -> Outcome | Decided | None:
        """The outcome the call ends with at an approve step, or the approval it goes on with
        (None: skipped by ``when``, or remembered)."""
        if step.when is not None and not step.when(scope):
            return None
        key = approving.key(step.remember, scope)
        if key is not None and ctx.approvals.remembered(step.name, key):
            bind_approved(step, None, scope)
            approving.passed(step.name, step.remember, key, remembered=True)
            return None
        answers = {
            s.name: scope[s.name]
            for s in self.steps
            if isinstance(s, QuestionStep) and isinstance(scope.get(s.name), Mapping)
        }
        asked = questions_shown(self.steps, scope, self.audit_redact)
        decided = ctx.gate.decide(step.ask(scope, inputs, answers, self.audit_redact, asked))
        if decided.status == "pending":
            return pending(self.name, decided, ctx)
        if decided.status == "spent":
            return spent(self.name, decided)
        if decided.status != "approved":
            return ended(step, decided, scope)
        bind_approved(step, decided, scope)
        approving.passed(step.name, step.remember, key, remembered=False)
        return decided

    def _url_ask(
        self,
        step: UrlAskStep,
        scope: dict[str, Any],
        inputs: Mapping[str, Any],
        answers: Answers,
        ctx: CallContext,
        others: bool,
    ) -> Question | Outcome | None:
        """The question to ask (again), how the call ends, or None once the page's values are
        bound.

        NOTE: the client's accept is only consent; the values come from the page. A round that
        asks other questions too does not wait for the page: it asks them at once.
        """
        ticket = ctx.url_asks.open(step.ask(scope, inputs))
        question = Question(step.name, str(step.message(scope)), {}, ticket.url, ticket.handle)
        answer = answers.answer_for(question)
        action = answer.get("action") if isinstance(answer, Mapping) else None
        if action in ("decline", "cancel"):
            scope[step.name] = {"action": action, "content": {}}
            ending: Ending = "declined" if action == "decline" else "cancelled"
            return replace(Outcome.from_value(step.endings[ending](scope)), ending=ending)
        if answer is not None and action != "accept":
            raise AnswerMismatch(
                step.name,
                [{"field": "action", "message": "action must be accept, decline or cancel"}],
            )
        wait_s = step.wait_s if answer is not None and not others else 0.0
        values = ctx.url_asks.submitted(ticket, wait_s)
        if values is None:
            return question
        scope.update(values)
        scope[step.name] = {"action": "accept", "content": {}}
        return None

    def _apply(
        self, step: QuestionStep, schema: dict[str, Any], answer: Answer, scope: dict[str, Any]
    ) -> Ending | None:
        """Bind an answer into scope; return how the call ends, or None to go on."""
        action = answer.get("action") if isinstance(answer, Mapping) else None
        if action in ("decline", "cancel"):
            scope[step.name] = {"action": action, "content": {}}
            if step.confirm:
                scope[step.name]["remembered"] = False
            return "declined" if action == "decline" else "cancelled"
        if action != "accept":
            raise AnswerMismatch(
                step.name,
                [{"field": "action", "message": "action must be accept, decline or cancel"}],
            )
        content = step.form.check(step.name, schema, answer.get("content"), self.audit_redact)
        scope.update(content)
        scope[step.name] = {"action": "accept", "content": content}
        if step.confirm:
            scope[step.name]["remembered"] = False
            if content.get("confirm") is not True:
                return "unticked"
        return None


def _defaults_of(input_schema: Mapping[str, Any]) -> dict[str, Any]:
    """The default of each argument that declares one."""
    return {
        k: v["default"]
        for k, v in input_schema.get("properties", {}).items()
        if isinstance(v, Mapping) and "default" in v
    }
