"""What a revision hands the tool-call core (:class:`Call`) and gets back (:class:`Step`)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from host.frozen import quick_init
from host.machine import Machine, Outcome, ProgressSink, Question
from host.protocol.answers import Ledger
from host.protocol.context import RequestContext
from host.protocol.messages import LogForward

__all__ = ["Asked", "Call", "Finished", "Step"]


@quick_init
@dataclass(frozen=True)
class Call:
    """One round of a ``tools/call``, as a revision hands it to the core.

    Attributes:
        machine: The tool.
        arguments: The call's arguments, valid for its input schema.
        request: Who calls, and over what.
        ledger: What earlier rounds left (:meth:`Ledger.start` on a first round); trusted:
            a revision hands over only a ledger it minted (sealed, or kept in the store).
        responses: This round's answers by key, as the client sent them; the ledger takes only
            those to questions it asked.
        can_ask: False when the client declared no way to answer a form question: a question
            then fails the call with -32021.
        can_ask_url: True when the client declared URL elicitation (in a revision that has
            it): without it, a URL ask fails the call with -32021.
        progress: Where the handlers' ``ctx.progress`` reports go; None drops them.
        logs: Where the handlers' ``ctx.log`` records go besides the server log; None: nowhere.
        version: The MCP revision the client speaks, for observers.
        trace: The caller's W3C trace context, for observers (:func:`trace_context`).
        cancelled: Whether the client has cancelled the call, asked once its act has run (a
            legacy session's ``notifications/cancelled``): the act is never interrupted, and
            the audit record of one that ran says the cancel came too late.
        task: The call may be carried by an MCP task (:mod:`host.protocol.modern.tasks`): its
            rounds hold no wait (an approval, a page) since the task is polled instead, and a
            round that stops at a pending approval does not end the call.
    """

    machine: Machine
    arguments: Mapping[str, Any]
    request: RequestContext
    ledger: Ledger
    responses: Mapping[str, Any] = field(default_factory=dict)
    can_ask: bool = True
    can_ask_url: bool = False
    progress: ProgressSink | None = None
    logs: LogForward | None = None
    version: str | None = None
    trace: Mapping[str, str] = field(default_factory=dict)
    cancelled: Callable[[], bool] | None = None
    task: bool = False


@quick_init
@dataclass(frozen=True)
class Finished:
    """The call is over: its outcome (the act's, an ending's, or a tool error), and the ledger
    it ended with (a task carries it on from a pending approval)."""

    outcome: Outcome
    ledger: Ledger | None = None


@quick_init
@dataclass(frozen=True)
class Asked:
    """The call needs answers: the questions to ask now, and the ledger the answers go with."""

    questions: tuple[Question, ...]
    ledger: Ledger


Step = Finished | Asked
