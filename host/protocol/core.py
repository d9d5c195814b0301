"""The tool-call core every protocol revision shares: find a tool, advance a call one round.

A revision (2026-07-28 with ``requestState``, or a legacy session with questions on an SSE stream)
only decides how questions reach the client and how answers come back. Everything else is here:
which answers apply to which questions, when the act may run, the at-most-once record of the act,
turning a mismatched answer into a JSON-RPC error, and the log line of each round.

A call's memory between rounds is a :class:`host.protocol.state.CallState`; the modern revision
seals it into ``requestState``, a legacy session may keep it wherever it likes.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from host.errors import ProtocolError
from host.machine import (
    AnswerMismatch,
    CallContext,
    Machine,
    NeedInput,
    Outcome,
    ProgressSink,
    Question,
)
from host.protocol.jsonrpc import ELICITATION_DISABLED, INVALID_PARAMS, MISSING_CAPABILITY, error
from host.protocol.messages import LogForward
from host.protocol.state import CallState, new_nonce
from host.spec.model import Server

__all__ = [
    "ELICITATION_DISABLED_MESSAGE",
    "Asked",
    "Finished",
    "OnceStore",
    "Step",
    "ToolHost",
    "can_elicit_form",
]

log = logging.getLogger("host.protocol")

ELICITATION_DISABLED_MESSAGE = (
    "Elicitation is disabled in server configuration. This tool needs to ask the user a "
    "question; to let it, add `elicitation: {enabled: true}` to the `kind: server` spec "
    "and restart the host."
)


class OnceStore(Protocol):
    """The part of :class:`host.store.Store` the core uses."""

    def once(self, key: str, ttl_s: float, compute: Callable[[], str], wait_s: float = 30.0) -> str:
        """Run ``compute`` at most once for ``key`` across processes; return the recorded value."""
        ...

    def get(self, key: str) -> str | None:
        """A finished record's value, or None."""
        ...


@dataclass(frozen=True)
class Finished:
    """The call is over: its outcome (the act's, an ending's, or a tool error)."""

    outcome: Outcome


@dataclass(frozen=True)
class Asked:
    """The call needs answers: the questions to ask now, and what the next round must carry."""

    questions: tuple[Question, ...]
    state: CallState


Step = Finished | Asked


def can_elicit_form(capabilities: Any) -> bool:
    """Whether declared client capabilities allow a form question.

    ``elicitation: {}`` means form only (for compatibility); ``{form: {}}`` says so; ``{url: {}}``
    alone does not allow forms.
    """
    if not isinstance(capabilities, Mapping):
        return False
    elicitation = capabilities.get("elicitation")
    if not isinstance(elicitation, Mapping):
        return False
    return not elicitation or "form" in elicitation


class ToolHost:
    """The tools of one server, and how one call advances round by round.

    Args:
        server: The server's spec: name, version, instructions, whether it may ask questions.
        machines: The compiled tools by name, in the order ``tools/list`` shows them.
        store: Where acts are recorded, so a retried final round never acts twice.
        data_dir: The host's data directory, passed to handlers in ``ctx``.
        act_ttl_s: How long an act's record is kept: at least as long as a state lives.
    """

    def __init__(
        self,
        server: Server,
        machines: Mapping[str, Machine],
        store: OnceStore,
        *,
        data_dir: Path = Path(".host"),
        act_ttl_s: float = 660.0,
    ) -> None:
        self.server = server
        self.machines = dict(machines)
        self.store = store
        self.data_dir = data_dir
        self.act_ttl_s = act_ttl_s
        self._tools = [machine.describe() for machine in self.machines.values()]

    @property
    def server_info(self) -> dict[str, str]:
        """``serverInfo``: the server's name and version."""
        return {"name": self.server.name, "version": self.server.version}

    def tools(self) -> list[dict[str, Any]]:
        """The MCP ``Tool`` objects, in a fixed order."""
        return list(self._tools)

    def machine(self, name: Any) -> Machine:
        """The tool called ``name``.

        Raises:
            ProtocolError: -32602 when there is no such tool.
        """
        machine = self.machines.get(name) if isinstance(name, str) else None
        if machine is None:
            raise error(INVALID_PARAMS, f"Unknown tool: {name!r}", {"name": name})
        return machine

    def advance(
        self,
        machine: Machine,
        arguments: Mapping[str, Any],
        *,
        principal: str,
        state: CallState | None = None,
        responses: Mapping[str, Any] | None = None,
        can_ask: bool = True,
        progress: ProgressSink | None = None,
        logs: LogForward | None = None,
    ) -> Step:
        """Run one round of a call whose arguments are already checked.

        Args:
            machine: The tool.
            arguments: The call's arguments (valid for its input schema).
            principal: Who calls.
            state: What earlier rounds left (None on the first round); trusted, already verified.
            responses: This round's answers by key; only keys ``state`` asked are used.
            can_ask: False when the client declared no way to answer a form question: a question
                then fails the call with -32021 (after the ELICITATION_DISABLED check).
            progress: Where the handlers' ``ctx.progress`` reports go; None drops them.
            logs: Where the handlers' ``ctx.log`` records go besides the server log (the
                client, at its level); None sends them to the server log only.

        Returns:
            :class:`Finished` with the outcome, or :class:`Asked` with questions and the next state.

        Raises:
            ProtocolError: -32602 when an accepted answer does not fit its form;
                ELICITATION_DISABLED when a question is due and the server may not ask;
                -32021 when a question is due and ``can_ask`` is False.
        """
        started = time.monotonic()
        round_ = state.round if state else 1
        fields: dict[str, Any] = {"tool": machine.name, "round": round_, "principal": principal}
        try:
            step = self._advance(
                machine, arguments, principal, state, responses or {}, fields, progress, logs
            )
            if isinstance(step, Asked) and not can_ask:
                raise error(
                    MISSING_CAPABILITY,
                    "The tool needs to ask the user a question, and the client did not declare "
                    "the elicitation (form) capability",
                    {"requiredCapabilities": {"elicitation": {"form": {}}}},
                )
        except ProtocolError as exc:
            fields.update(outcome="rejected", code=exc.code)
            raise
        finally:
            fields["duration_ms"] = round((time.monotonic() - started) * 1000, 1)
            log.info("tool call", extra={"event": "tool_call", **fields})
        return step

    def _advance(
        self,
        machine: Machine,
        arguments: Mapping[str, Any],
        principal: str,
        state: CallState | None,
        responses: Mapping[str, Any],
        fields: dict[str, Any],
        progress: ProgressSink | None,
        logs: LogForward | None,
    ) -> Step:
        nonce = state.nonce if state else new_nonce()
        ctx = self._context(machine, principal, state, nonce)
        ctx.report = progress
        if logs is not None:
            ctx.log = logs.logger(ctx.log)
        if state is None:
            # NOTE: a first round may already carry answers (a client that knows the questions,
            # SEP-2322's "ignore extra params"). They are checked against their forms like any
            # other; with no earlier round there is nothing to bind them to but the question key.
            answers: dict[str, Any] = {k: _answer(v) for k, v in responses.items()}
            result = self._run(machine, arguments, answers, ctx)
        else:
            recorded = self.store.get(_act_key(nonce))
            if recorded is not None:
                # NOTE: the act already ran for this call (a retried final round). Reads may no
                # longer hold (the ticket is deleted), so answer from the record before running.
                fields.update(outcome="complete", acted=False, replayed=True)
                return Finished(Outcome.from_json(recorded))
            answers = dict(state.answers)
            answers.update(
                (key, _answer(responses[key])) for key in state.asked if key in responses
            )
            result = self._run(machine, arguments, answers, ctx, state.digests)
        if isinstance(result, NeedInput):
            fields.update(outcome="input_required", asked=[q.key for q in result.questions])
            if result.reasked:
                # The data changed between rounds: those answers answered other questions.
                fields["reasked"] = list(result.reasked)
            if not self.server.elicitation_enabled:
                raise error(
                    ELICITATION_DISABLED,
                    ELICITATION_DISABLED_MESSAGE,
                    {"type": "ELICITATION_DISABLED", "tool": machine.name},
                )
            next_state = CallState(
                nonce=nonce,
                answers=answers,
                asked=tuple(q.key for q in result.questions),
                digests={
                    **(state.digests if state else {}),
                    **{q.key: q.digest() for q in result.questions},
                },
                round=ctx.round + 1,
            )
            return Asked(result.questions, next_state)
        if state is not None and not result.acted:
            result = self._settle(nonce, result)
        fields.update(
            outcome="error" if result.is_error else "complete",
            acted=result.acted and not result.replayed,
            replayed=result.replayed,
            incident=result.incident,
        )
        return Finished(result)

    def _run(
        self,
        machine: Machine,
        arguments: Mapping[str, Any],
        answers: Mapping[str, Any],
        ctx: CallContext,
        asked: Mapping[str, str] | None = None,
    ) -> NeedInput | Outcome:
        try:
            return machine.run(arguments, answers, ctx, asked)
        except AnswerMismatch as exc:
            raise error(
                INVALID_PARAMS, exc.message, {"key": exc.key, "errors": exc.errors}
            ) from None

    def _settle(self, nonce: str, outcome: Outcome) -> Outcome:
        """A later round that did not act: if a copy of it did act, answer with that record.

        NOTE: concurrent copies of a final round race: one acts, and the others may see the
        act's effect in their reads (a deleted ticket) and end in an error before reaching the
        once-guard. The effect only ever happens inside the winner's claim, so waiting on that
        claim here turns every such copy into the recorded result.
        """
        try:
            recorded = self.store.once(_act_key(nonce), self.act_ttl_s, _no_act)
        except _NoAct:
            return outcome
        return Outcome.from_json(recorded)

    def _context(
        self, machine: Machine, principal: str, state: CallState | None, nonce: str
    ) -> CallContext:
        ctx = CallContext(
            principal=principal,
            tool=machine.name,
            data_dir=self.data_dir,
            log=logging.getLogger(f"host.handler.{machine.name}"),
            round=state.round if state else 1,
        )
        if state is not None:
            # NOTE: only a call that asked has a nonce the client can send back; a first-round
            # act cannot be retried as the same call, so it needs no record.
            key, ttl = _act_key(nonce), self.act_ttl_s

            def once(act: Callable[[], Outcome]) -> Outcome:
                ran: list[Outcome] = []

                def record() -> str:
                    ran.append(act())
                    return ran[0].to_json()

                recorded = self.store.once(key, ttl, record)
                # NOTE: the caller that ran the act keeps its own outcome; concurrent copies
                # of the final round get the record, marked as replayed in the log.
                return ran[0] if ran else Outcome.from_json(recorded)

            ctx.once = once
        return ctx


class _NoAct(Exception):
    """Raised inside a claim to find out, without acting, whether the act ran or is running."""


def _no_act() -> str:
    raise _NoAct


def _act_key(nonce: str) -> str:
    return "act:" + nonce


def _answer(value: Any) -> Any:
    """An answer with only the members MCP defines, so junk never travels in the state."""
    if not isinstance(value, Mapping):
        return value  # the machine rejects it with a clear message
    kept = {"action": value.get("action")}
    if "content" in value:
        kept["content"] = value["content"]
    return kept
