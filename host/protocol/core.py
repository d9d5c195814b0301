"""The tool-call core every protocol revision shares: find a tool, advance a call one round.

A revision (the modern one with ``requestState``, or a legacy session with questions on an SSE
stream or in tool results) only decides how questions reach the client and how answers come back; it
hands the core a :class:`Call` and gets a :class:`Step`. Everything else is here, once: which
answers count (through the call's :class:`host.protocol.answers.Ledger`), when the act may run,
its at-most-once record, turning a mismatched answer into a JSON-RPC error, and telling the
observers (log line, metrics, audit, traces) what happened in the round.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from host.auth import missing_scopes
from host.errors import AnswerMismatch, ProtocolError, ScopeError
from host.machine import (
    NO_APPROVALS,
    NO_GATE,
    CallContext,
    Machine,
    NeedInput,
    Once,
    Outcome,
    act_directly,
)
from host.machine.pages import NO_URL_ASKS
from host.protocol.acts import Acts
from host.protocol.answers import Ledger
from host.protocol.approvals import StoreApprovals
from host.protocol.context import RequestContext
from host.protocol.digests import digest
from host.protocol.elicit_modes import cannot_ask, missing_modes
from host.protocol.elicitation import Elicitation
from host.protocol.endings import awaits_approval, changed, refused
from host.protocol.events import (
    ActObserver,
    LogObserver,
    Observer,
    Refusal,
    Round,
    notify,
    notify_refused,
)
from host.protocol.gate import Opened, StoreGate
from host.protocol.jsonrpc import ELICITATION_DISABLED, INVALID_PARAMS, MISSING_CAPABILITY, error
from host.protocol.locks import StoreLocks
from host.protocol.steps import Asked, Call, Finished, Step
from host.protocol.url_asks import CallAsks, UrlAskBook
from host.spec.model import Server
from host.store import Store
from host.store.shared import Started

__all__ = ["ToolHost"]

log = logging.getLogger("host.protocol")


class ToolHost:
    """The tools of one server, and how one call advances round by round.

    Args:
        server: The server's spec: name, version, instructions, whether it may ask questions.
        machines: The compiled tools by name, in the order ``tools/list`` shows them.
        store: Where acts are claimed and recorded, so no final round ever acts twice.
        data_dir: The host's data directory, passed to handlers in ``ctx``.
        act_ttl_s: How long an act's record is kept: at least as long as a state lives.
        observers: Told about every round (the log line by default).
        elicitation: Whether tools may ask; by default what the server spec says
            (:meth:`Elicitation.decide`). The assembly decides it with the deployment's switch.
        pending_limit: The most approval requests one authenticated caller may have pending.
        record_max: Bytes of arguments an approval request keeps whole (``HOST_RECORD_MAX``).
        approval_opened: Told about each approval request a call opens (the webhook).
        url_asks: The URL asks' book (their pages); None: a tool that asks on a page cannot.
    """

    def __init__(
        self,
        server: Server,
        machines: Mapping[str, Machine],
        store: Store,
        *,
        data_dir: Path = Path(".host"),
        act_ttl_s: float = 660.0,
        observers: Sequence[Observer] = (LogObserver(),),
        elicitation: Elicitation | None = None,
        pending_limit: int | None = 20,
        record_max: int = 16 * 1024,
        approval_opened: Opened | None = None,
        url_asks: UrlAskBook | None = None,
    ) -> None:
        self.server = server
        self.url_asks = url_asks
        self.pending_limit = pending_limit
        self.record_max = record_max
        self.approval_opened = approval_opened
        self.machines = dict(machines)
        self.store = store
        self.acts = Acts(store, act_ttl_s)
        self.locks = StoreLocks(store)
        self.data_dir = data_dir
        self.act_ttl_s = act_ttl_s
        self.observers = tuple(observers)
        # NOTE: one observer keeps the record of a lost act (the audit); found once, not per act.
        self._keeper = next((o for o in self.observers if isinstance(o, ActObserver)), None)
        self.elicitation = elicitation or Elicitation.decide(server)
        self._tools = [machine.describe() for machine in self.machines.values()]
        self._loggers = {name: logging.getLogger(f"host.handler.{name}") for name in machines}
        # NOTE: what a legacy session's tools/list shows depends on the tools and on whether
        # they may ask (the fallback tool); a session that saw another digest is told the list
        # changed (a reload).
        self.generation = digest([self._tools, self.asks])

    @property
    def server_info(self) -> dict[str, str]:
        """``serverInfo``: the server's name and version."""
        return {"name": self.server.name, "version": self.server.version}

    @property
    def asks(self) -> bool:
        """Whether some tool may ask the user a question and the server lets it."""
        return self.elicitation.enabled and self.may_have_asked

    @property
    def may_have_asked(self) -> bool:
        """Whether some tool asks questions (so answers to earlier ones may still come back)."""
        return any(m.asks for m in self.machines.values())

    def tools(self) -> list[dict[str, Any]]:
        """The MCP ``Tool`` objects, in a fixed order."""
        return list(self._tools)

    def machine(self, name: Any, request: RequestContext) -> Machine:
        """The tool called ``name``, if the caller may call it: before anything of it runs.

        Raises:
            ProtocolError: -32602 when there is no such tool.
            ScopeError: the caller lacks a scope the tool needs (HTTP 403).
        """
        machine = self.machines.get(name) if isinstance(name, str) else None
        if machine is None:
            raise error(INVALID_PARAMS, f"Unknown tool: {name!r}", {"name": name})
        # NOTE: most tools need no scope of their own: nothing to look for then.
        missing = missing_scopes(request.scopes, machine.scopes) if machine.scopes else None
        if missing:
            log.info(
                "scope refused",
                extra={
                    "event": "scope_refused",
                    "tool": machine.name,
                    "principal": request.principal,
                    "missing": missing,
                },
            )
            notify_refused(
                self.observers,
                Refusal("forbidden", "insufficient_scope", machine.name, request.owner),
            )
            raise ScopeError(tuple(sorted(machine.scopes)), tuple(missing))
        return machine

    def advance(self, call: Call) -> Step:
        """Run one round of ``call``.

        Returns:
            :class:`Finished` with the outcome, or :class:`Asked` with questions and the ledger.

        Raises:
            ProtocolError: -32602 when an accepted answer does not fit its form;
                ELICITATION_DISABLED when a question is due and the server may not ask;
                -32021 when a question is due and the client cannot answer forms.
        """
        # NOTE: the caller read from its identity, not through the request's properties: a
        # call of a Python function less for each (the round reads them on every call).
        identity, machine, ledger = call.request.identity, call.machine, call.ledger
        event = Round(
            machine.name,
            ledger.round,
            identity.principal,
            time.monotonic(),
            owner=identity.owner,
            version=call.version,
            trace=call.trace,
            nonce=ledger.nonce,
            call_started=ledger.started,
            arguments=call.arguments,
            redact=machine.audit_redact,
            read_only=machine.read_only,
        )
        try:
            step = self._advance(call, event)
            if event.acted and call.cancelled is not None and call.cancelled():
                event.late_cancel = True
            return step
        except ProtocolError as exc:
            event.outcome, event.code = "rejected", exc.code
            raise
        finally:
            event.duration_s = time.monotonic() - event.started
            notify(self.observers, event)

    def withdrawn(self, call: Call, ledger: Ledger) -> None:
        """Tell the observers that the client cancelled ``call`` while its questions were open.

        Nothing ran in the round the cancel ended, so the core never saw it; the audit trail
        records the call as ``cancelled``, with the answers taken before.
        """
        event = Round(
            call.machine.name,
            ledger.round,
            call.request.principal,
            time.monotonic(),
            owner=call.request.owner,
            version=call.version,
            trace=call.trace,
            nonce=ledger.nonce,
            call_started=ledger.started,
            arguments=call.arguments,
            redact=call.machine.audit_redact,
            ending="cancelled",
            ends=True,
            call_answers=ledger.answers(),
        )
        notify(self.observers, event)

    def _advance(self, call: Call, event: Round) -> Step:
        machine = call.machine
        ledger = call.ledger
        if ledger.asked:  # NOTE: a first round asked nothing: no answers to take or count
            ledger = ledger.take(call.responses, machine.form_fields)
            event.answers = ledger.answered(k for k in call.ledger.asked if k in call.responses)
        if ledger.round == 1 and ledger.definition != machine.definition:
            ledger = ledger.bound(machine.definition)
        # NOTE: a later round asks first what became of its act only when its steps could
        # change something on the way to it (a page, an approval, a remembered yes); a plain
        # tool's steps are reads and questions, and its act's claim answers that question itself
        # (a claim taken already is the act's record), so only a round that ends without acting
        # asks it (settle).
        later = ledger.round > 1
        early = later and (machine.signs_in or machine.remembers)
        if early or (later and not ledger.fits(machine.definition)):
            recorded = self.acts.recorded(ledger.nonce, machine.name)
            if recorded is not None:
                return self._finished(event, recorded, ledger)
            if not ledger.fits(machine.definition):
                return self._finished(event, changed(machine, call.request), ledger)
        pages = (
            self.url_asks.for_call(machine, call.request, hold=not call.task)
            if machine.asks_on_pages and self.url_asks is not None
            else None
        )
        try:
            result = machine.run(call.arguments, ledger, self._context(call, ledger, pages))
        except AnswerMismatch as exc:
            raise error(
                INVALID_PARAMS, exc.message, {"key": exc.key, "errors": exc.errors}
            ) from None
        if isinstance(result, NeedInput):
            recorded = (
                self.acts.recorded(ledger.nonce, machine.name) if later and not early else None
            )
            if recorded is not None:  # NOTE: a retry of a round that acted, asked again now
                return self._finished(event, recorded, ledger)
            return self._ask(call, ledger, result, event)
        if pages is not None and not awaits_approval(result):
            pages.end()  # NOTE: the call is over: its pages' values go with it
        if ledger.round > 1 and not result.acted:
            result = self.acts.settle(ledger.nonce, result, machine.name)
        if call.task and awaits_approval(result):
            # NOTE: a task goes on from here when the request is decided: not the call's end.
            event.outcome = "input_required"
            return Finished(result, ledger)
        return self._finished(event, result, ledger)

    def _ask(self, call: Call, ledger: Ledger, need: NeedInput, event: Round) -> Asked:
        event.outcome = "input_required"
        event.asked = tuple(q.key for q in need.questions)
        event.reasked = ledger.stale(need.questions)
        if not self.elicitation.enabled:
            # NOTE: either refusal below ends the call: the same round would be refused again.
            event.ends, event.call_answers = True, ledger.answers()
            raise error(
                ELICITATION_DISABLED,
                self.elicitation.message,
                {"type": "ELICITATION_DISABLED", "tool": call.machine.name},
            )
        missing = missing_modes(call, need.questions)
        if missing:
            event.ends, event.call_answers = True, ledger.answers()
            raise error(
                MISSING_CAPABILITY,
                cannot_ask(call.machine.name, missing),
                {"requiredCapabilities": {"elicitation": {m: {} for m in missing}}},
            )
        return Asked(need.questions, ledger.next(need.questions))

    @staticmethod
    def _finished(event: Round, outcome: Outcome, ledger: Ledger) -> Finished:
        event.outcome = "error" if outcome.is_error else "complete"
        event.acted = outcome.acted and not outcome.replayed
        event.replayed = outcome.replayed
        event.incident = outcome.incident
        event.ending = outcome.ending
        event.ends = True
        event.call_answers = ledger.answers()
        event.approvals = outcome.approvals
        event.approval = outcome.approval
        return Finished(outcome, ledger)

    def _context(self, call: Call, ledger: Ledger, pages: CallAsks | None) -> CallContext:
        machine = call.machine
        log = self._loggers[machine.name]
        identity = call.request.identity
        gate = self._gate(call, ledger) if machine.approves else NO_GATE
        return CallContext(
            principal=identity.principal,
            scopes=identity.scopes,
            claims=identity.claims,
            tool=machine.name,
            data_dir=self.data_dir,
            log=call.logs.logger(log) if call.logs is not None else log,
            round=ledger.round,
            # NOTE: a tool without an act never runs its guard: none is made for it (its claim
            # or record, and the closures that carry them, were a read's largest part of this).
            once=act_directly if machine.read_only else self._once(call, ledger, gate),
            report=call.progress,
            approvals=(
                StoreApprovals(self.store, identity.owner, machine.name, machine.definition)
                if machine.remembers
                else NO_APPROVALS
            ),
            gate=gate,
            locks=self.locks,
            url_asks=pages or NO_URL_ASKS,
        )

    def _once(self, call: Call, ledger: Ledger, gate: object) -> Once:
        """The act's ``ctx.once``: a call holding a no never acts; a later round's act is
        claimed; a first round's has only its record (no client can send it again)."""
        refusal = refused(ledger) if ledger.accepted else None
        if refusal is not None:
            return refusal
        machine = call.machine

        def lost(incident: str) -> Started | None:
            return self._lost_record(call, ledger, incident, gate)

        if ledger.round > 1:
            return self.acts.guard(ledger.nonce, machine.name, machine.act_timeout_s, lost)
        return self.acts.first(machine.name, machine.act_timeout_s, lost)

    def _lost_record(
        self, call: Call, ledger: Ledger, incident: str, gate: object
    ) -> Started | None:
        """Before an act runs: the audit's record of the round as it ends if the act is lost
        (with the approval request its gate found, and every decision on it)."""
        keeper = self._keeper
        if keeper is None:
            return None
        event = Round(
            call.machine.name,
            ledger.round,
            call.request.principal,
            time.monotonic(),
            owner=call.request.owner,
            outcome="error",
            acted=True,
            incident=incident,
            version=call.version,
            trace=call.trace,
            nonce=ledger.nonce,
            call_started=ledger.started,
            arguments=call.arguments,
            redact=call.machine.audit_redact,
            ends=True,
            call_answers=ledger.answers(),
            approval=getattr(gate, "last", None),
        )
        return keeper.lost_record(event, call.machine.act_timeout_s)

    def _gate(self, call: Call, ledger: Ledger) -> StoreGate:
        return StoreGate(
            self.store,
            call.machine,
            call.request.owner,
            ledger.nonce,
            hold=not call.task,
            progress=call.progress,
            limit=self.pending_limit,
            opened=self.approval_opened,
            most=self.record_max,
        )
