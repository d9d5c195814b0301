"""What happened in a round of a tool call, told once, by the core, to every observer.

The log line, the metrics, the audit trail and the traces all want the same facts about a round:
which tool, which round, who called, what was asked, how the user answered, whether the act ran or
was replayed, how it ended, how long it took. The core fills one :class:`Round` per round and hands
it to each :class:`Observer`; nobody else re-derives those facts, so they cannot drift apart.

Some facts are for the audit trail alone and are filled in only by the round that ends a call
(:attr:`Round.ends`): the call's arguments, every answer's content and the approvals it went
past. No other observer may write them anywhere (the log line never holds arguments or answers).

Requests refused before any round runs (a bad token, a missing scope, a ``requestState`` that
does not open) are told the same way, as one :class:`Refusal` each, by the code that refuses
them, to the observers that want them (:class:`RefusalObserver`): :func:`notify_refused`.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol, runtime_checkable

from host.logs import emit
from host.machine import Approved, Decided
from host.store.shared import Started

__all__ = [
    "ActObserver",
    "LogObserver",
    "Observer",
    "Refusal",
    "RefusalKind",
    "RefusalObserver",
    "Round",
    "RoundOutcome",
    "notify",
    "notify_refused",
]

log = logging.getLogger("host.protocol")

RoundOutcome = Literal["input_required", "complete", "error", "rejected"]
"""How a round ended: it asked, it finished (well or with a tool error), or it was refused."""


@dataclass
class Round:
    """The facts of one round of a ``tools/call``, filled in as the round runs.

    Attributes:
        tool: The tool's name.
        round: The round's number, from 1.
        principal: Who called, by name (as logs show it).
        started: When the round started (``time.monotonic()``).
        outcome: How it ended.
        asked: Keys of the questions it asked (``input_required``).
        reasked: Keys among ``asked`` whose earlier answers no longer applied: the question's
            text changed since it was answered.
        answers: This round's answers taken, by key: their actions.
        acted: The act ran in this round.
        replayed: The result is the act's record from an earlier request.
        ending: ``declined``, ``cancelled`` or ``unticked`` when the user ended the call so;
            ``busy`` when the act's lock stayed held by another call.
        incident: The incident id of an internal failure.
        code: The JSON-RPC error code of a rejected round.
        duration_s: Seconds the round took.
        method: The MCP method the round answers (``tools/call``).
        version: The MCP revision the client speaks, when known.
        trace: The caller's W3C trace context (``traceparent``, ``tracestate``), when it sent one.
        nonce: The call's nonce, the same in every round of one call (and in concurrent copies
            of its final round): the audit trail keeps one record per nonce.
        call_started: When the call's first round started (Unix time; 0 when unknown).
        arguments: The call's arguments (never logged).
        redact: The fields the tool's ``audit: {redact}`` names.
        ends: This round ended the call: it finished (a result, a tool error, a question's
            ending), or it was refused in a way the call cannot get past (questions switched
            off, a client that cannot answer). A round that asks, or whose answer did not fit
            its form (the client may send it again), does not end the call.
        call_answers: When the round ends the call, every answer the call took, by key:
            ``{action, content}`` (never logged).
        approvals: When the round ends the call, the confirms it went past.
        read_only: The tool has no act: a call that completes is audited as ``read``.
        late_cancel: The client cancelled the call while its act ran (the act went on).
        approval: The approval request the call went through, or stopped at.
        owner: Who owns what the call keeps (:attr:`~host.auth.identity.Identity.owner`), as
            the audit trail records it; empty: ``principal``.
    """

    tool: str
    round: int
    principal: str
    started: float
    outcome: RoundOutcome = "complete"
    asked: tuple[str, ...] = ()
    reasked: tuple[str, ...] = ()
    answers: Mapping[str, str] = field(default_factory=dict)
    acted: bool = False
    replayed: bool = False
    ending: str | None = None
    incident: str | None = None
    code: int | None = None
    duration_s: float = 0.0
    method: str = "tools/call"
    version: str | None = None
    trace: Mapping[str, str] = field(default_factory=dict)
    nonce: str = ""
    call_started: float = 0.0
    arguments: Mapping[str, Any] = field(default_factory=dict)
    redact: frozenset[str] = frozenset()
    ends: bool = False
    call_answers: Mapping[str, Any] = field(default_factory=dict)
    approvals: tuple[Approved, ...] = ()
    read_only: bool = False
    late_cancel: bool = False
    approval: Decided | None = None
    owner: str = ""


RefusalKind = Literal["unauthenticated", "forbidden", "state"]
"""Why a request was refused: no valid token (401), a scope missing (403), a bad requestState."""


@dataclass(frozen=True)
class Refusal:
    """A request refused before any round ran.

    Attributes:
        kind: What was refused.
        reason: Why, in a few fixed words (never client input): ``invalid_token``,
            ``insufficient_scope``, ``expired``, ``bad signature or encoding``, ...
        tool: The tool the request named, when it is one of the server's.
        principal: Who was refused, when known (a scope refusal; not a bad token).
    """

    kind: RefusalKind
    reason: str
    tool: str | None = None
    principal: str | None = None


class Observer(Protocol):
    """Something that wants to know about every round (log, metrics, audit, traces)."""

    def round_ended(self, event: Round) -> None:
        """Called once per round, after it ended, on the request's thread."""
        ...


@runtime_checkable
class ActObserver(Protocol):
    """An observer that must hold something durable before an act runs (the audit)."""

    def lost_record(self, event: Round, within_s: float) -> Started:
        """The record to keep, before the act runs, of ``event`` as if its act were lost.

        Called on the request's thread; ``within_s`` is the act's time limit: its round ends by
        then unless its worker died. The core writes the record with the act's claim, in one
        durable write (a first round's act, which has no claim, in one of its own); when that
        write fails, the act does not run (503).
        """
        ...


def notify(observers: Sequence[Observer], event: Round) -> None:
    """Tell every observer; one that fails is logged and does not stop the others or the call."""
    for observer in observers:
        try:
            observer.round_ended(event)
        except Exception:
            log.exception("an observer failed", extra={"event": "observer_failed"})


@runtime_checkable
class RefusalObserver(Protocol):
    """An observer that also wants to know about refused requests (metrics)."""

    def refused(self, event: Refusal) -> None:
        """Called once per refused request, on the request's thread."""
        ...


def notify_refused(observers: Sequence[object], event: Refusal) -> None:
    """Tell the observers that want refusals; one that fails is logged and does not stop others."""
    for observer in observers:
        if isinstance(observer, RefusalObserver):
            try:
                observer.refused(event)
            except Exception:
                log.exception("an observer failed", extra={"event": "observer_failed"})


class LogObserver:
    """Writes the ``tool call`` log line of each round (``event: tool_call``)."""

    def round_ended(self, event: Round) -> None:
        """One INFO line with the round's facts; never arguments or answers' content."""
        if not log.isEnabledFor(logging.INFO):
            return
        fields: dict[str, Any] = {
            "event": "tool_call",
            "tool": event.tool,
            "round": event.round,
            "principal": event.principal,
            "outcome": event.outcome,
            "duration_ms": round(event.duration_s * 1000, 1),
        }
        if event.asked:
            fields["asked"] = list(event.asked)
        if event.reasked:
            fields["reasked"] = list(event.reasked)
        if event.answers:
            fields["answers"] = dict(event.answers)
        if event.outcome in ("complete", "error"):
            fields.update(acted=event.acted, replayed=event.replayed, incident=event.incident)
        if event.ending:
            fields["ending"] = event.ending
        if event.code is not None:
            fields["code"] = event.code
        emit(log, logging.INFO, "tool call", fields)
