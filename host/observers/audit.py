"""The audit trail: one record in the store for every call that reaches an end.

An observer of the same :class:`host.protocol.Round` events as the log line and the metrics. Only
a round that ends a call (:attr:`Round.ends`) costs anything: one store write, a single statement
(an SQLite upsert, a Redis script). Rounds that ask write nothing.

Which round's word is kept, for a call whose final round runs more than once:

* the copies of a final round that a client retries (or sends fifty times at once) share the
  call's nonce, so they write one record between them; the round that ran the act writes over
  any other copy's record (``ACTED`` outranks ``ENDED``), and otherwise the first one written
  stays (a replay of a recorded result adds nothing);
* an act still running past its time limit is recorded when its round ends: ``incident``,
  ``acted`` true, with the incident id the client and the log were given; its later result is
  not written back here (a retry returns it to the client);
* an act whose worker died before anything was recorded is written by the first retry that
  learns it: ``incident``, ``acted`` true;
* a call that never ends (its client never sends the answers, a legacy question times out, the
  arguments do not fit the schema, the caller lacks a scope) writes no record: no step of it
  ran past its questions.

Records are written off the request path (:class:`host.observers.batches.Batches`): each worker
process gathers the records of the calls that ended in the last few milliseconds and writes them
in one store transaction (SQLite) or one round trip (Redis), so no call waits for its record. A
process that exits normally writes what it holds first; one that is killed or crashes loses the
records of its last few milliseconds of calls (their acts' claims and results are not affected).

A store that cannot take the records (unreachable, or an SQLite file another process holds locked
for over a second) does not fail or hold up any call: the records are given up, and the log says
so (``audit_unwritten``, with each call's id, tool, principal and outcome, never its arguments).

Fields a tool's ``audit: {redact: [...]}`` names, in the arguments and in every answer's content,
are stored as ``"[redacted]"``: their clear values are never written to the store. Records older
than the retention period (``HOST_AUDIT_RETENTION``) are pruned by the writer, at most once an
hour per process.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Mapping, Sequence
from typing import Any

from host.errors import StoreError
from host.observers.batches import Batches
from host.protocol.events import Round
from host.store import Store
from host.store.records import ACTED, ENDED, AuditRecord, approval_id, call_id

__all__ = ["REDACTED", "AuditObserver", "audit_record", "outcome_of"]

log = logging.getLogger("host.audit")

REDACTED = "[redacted]"
"""What a redacted field's value reads as in the audit trail."""

#: How often one process prunes records past the retention period, at most.
PRUNE_EVERY_S = 3600.0


def outcome_of(event: Round) -> str:
    """The audit outcome of a call-ending round.

    ``declined``, ``cancelled`` or ``unticked`` when the user ended it so, ``busy`` when the
    act's lock stayed held by another call for all of its ``lock_wait``; ``acted`` when it
    finished without a tool error (``read`` for a read-only tool: it has no act);
    ``incident`` for an internal failure or an act whose outcome is unknown (each has an
    incident id); ``error`` for any other tool error or refusal.
    """
    if event.ending:
        return event.ending
    if event.outcome == "complete":
        return "read" if event.read_only else "acted"
    if event.incident:
        return "incident"
    return "error"


def audit_record(event: Round, now: float) -> AuditRecord:
    """The record of the call ``event`` ended, at ``now`` (Unix time), fields redacted."""
    hidden = event.redact
    answers = {
        key: _answer(answer, hidden) if isinstance(answer, Mapping) else answer
        for key, answer in event.call_answers.items()
    }
    approvals = []
    for given in event.approvals:
        used: dict[str, Any] = {
            "question": given.question,
            "via": "remembered" if given.remembered else "asked",
        }
        if given.key is not None:
            used["approval"] = approval_id(event.principal, event.tool, given.question, given.key)
        approvals.append(used)
    started = event.call_started
    return AuditRecord(
        call_id(event.nonce),
        now,
        event.principal,
        event.tool,
        outcome_of(event),
        arguments=_redacted(event.arguments, hidden),
        answers=answers,
        approvals=tuple(approvals),
        acted=event.acted or event.replayed,
        incident=event.incident,
        duration_s=max(0.0, now - started) if started else event.duration_s,
        code=event.code,
    )


def _redacted(values: Mapping[str, Any], hidden: frozenset[str]) -> dict[str, Any]:
    if not hidden:
        return dict(values)
    return {k: REDACTED if k in hidden else v for k, v in values.items()}


def _answer(answer: Mapping[str, Any], hidden: frozenset[str]) -> dict[str, Any]:
    kept: dict[str, Any] = {"action": answer.get("action")}
    content = answer.get("content")
    if isinstance(content, Mapping):
        kept["content"] = _redacted(content, hidden)
    return kept


class AuditObserver:
    """Writes the audit record of every call that ends, and prunes old ones now and then.

    Args:
        store: The shared store.
        retention_s: How long records are kept.
        window_s: How long records are gathered into one write.
    """

    def __init__(self, store: Store, retention_s: float, *, window_s: float = 0.005) -> None:
        self.store = store
        self.retention_s = retention_s
        self._next_prune = 0.0
        self._batches: Batches[tuple[Round, float]] = Batches(
            self._write, "host-audit", window_s=window_s
        )

    def round_ended(self, event: Round) -> None:
        """Queue the call's record if this round ended it; nothing otherwise."""
        if event.ends:
            self._batches.put((event, time.time()))

    def flush(self, timeout_s: float = 10.0) -> bool:
        """Wait until every record queued so far is written (or given up); False on timeout."""
        return self._batches.flush(timeout_s)

    def _write(self, ended: Sequence[tuple[Round, float]]) -> None:
        """Write one batch of records (on the writer's thread)."""
        records = [(audit_record(event, now), event) for event, now in ended]
        try:
            self.store.write_audits(
                [(record, ACTED if event.acted else ENDED) for record, event in records],
                keep_s=self.retention_s,
            )
        except StoreError as exc:
            for record, event in records:
                log.error(
                    "an audit record could not be written: %s",
                    exc.message,
                    extra={
                        "event": "audit_unwritten",
                        "tool": event.tool,
                        "principal": event.principal,
                        "outcome": record.outcome,
                        "call": record.id,
                    },
                )
            return
        if time.monotonic() >= self._next_prune:
            self._prune(time.time())

    def _prune(self, now: float) -> None:
        self._next_prune = time.monotonic() + PRUNE_EVERY_S
        try:
            pruned = self.store.prune_audit(now - self.retention_s)
        except StoreError as exc:
            log.warning(
                "old audit records could not be pruned: %s",
                exc.message,
                extra={"event": "audit_prune_failed"},
            )
            return
        if pruned:
            log.info(
                "pruned old audit records",
                extra={"event": "audit_pruned", "records": pruned},
            )
