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
* every act about to run has its record written first, at once and durably, as the act would be
  recorded if lost: ``incident``, ``acted`` true, with a note. A later round's goes in the same
  write as the act's claim (one transaction, one Redis script); a first round's act, which has no
  claim, keeps it alone (:meth:`host.store.Store.act_starting`: on SQLite, appended to a file of
  the worker's own that whoever finds the worker dead writes into the store). The round's own
  record replaces it when the round ends, so a worker killed while or right after the act ran
  leaves that record, with no retry needed (a retry that learns the act was lost writes the same
  outcome over it); a store that refuses a claim and its record refuses the act (503);
* a call that never ends (its client never sends the answers, a legacy question times out, the
  arguments do not fit the schema) writes no record: no step of it ran past its questions;
* a request refused for its credentials (401: no valid token; 403: a scope missing) writes a
  record of outcome ``refused``, so a review sees attempts as well as acts: the principal when
  known (``(unauthenticated)`` otherwise), the tool when named, never arguments.

Records are written off the request path (:class:`host.observers.batches.Batches`): each worker
process gathers the records of the calls that ended in the last few milliseconds and writes them
in one store transaction (SQLite) or one round trip (Redis), so no call waits for its record. A
process that exits normally writes what it holds first; one that is killed or crashes loses the
records of its last few milliseconds of calls (their acts' claims and results are not affected).

A store that cannot take the records (a full disk, Redis refusing writes, an SQLite file another
process holds locked for over a second) does not fail or hold up any call: the records are held,
in order, and written before any newer one once it takes writes again (:mod:`.held`: bounded,
and what goes past the bound is counted and logged). A batch that fails for one record the
encoder or the store cannot take is written again record by record, so that record never loses
the others; it alone is given up (``audit_unwritten``, with the call's id, tool, principal and
outcome, never its arguments).

Decisions on approval requests are recorded too (:mod:`.decisions`): each approver's when it is
made (the approvals service tells :meth:`AuditObserver.decided`), a request's expiry when a
call or a look at the requests finds it, and a withdrawal when a caller cancels
(:meth:`AuditObserver.request_ended`). Every record is one entry of the store's chain
(:mod:`host.store.chain`).

Fields a tool's ``audit: {redact: [...]}`` names, in the arguments and in every answer's content,
are stored as ``"[redacted]"``: their clear values are never written to the store. Records older
than the retention period (``HOST_AUDIT_RETENTION``) are pruned by the writer, at most once an
hour per process.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Mapping, Sequence
from typing import Any

from host import ids
from host.errors import StoreError
from host.jsonvalues import storable
from host.limits import LimitSettings
from host.observers.audit_settings import DEFAULT_HELD_MAX
from host.observers.batches import Batches
from host.observers.decisions import HOST, decision_record, request_used
from host.observers.held import Held, Writes
from host.protocol.events import Refusal, Round
from host.store import Store
from host.store.bounded import bounded
from host.store.records import ACTED, ENDED, AuditRecord, approval_id, call_id
from host.store.requests import ApprovalRequest
from host.store.shared import Started

__all__ = [
    "HOST",
    "LATE_CANCEL",
    "LOST_NOTE",
    "REDACTED",
    "AuditObserver",
    "audit_record",
    "decision_record",
    "outcome_of",
]

log = logging.getLogger("host.audit")

REDACTED = "[redacted]"
"""What a redacted field's value reads as in the audit trail."""

LOST_NOTE = (
    "the act started, and its worker stopped before the call's outcome was recorded: "
    "check whether it took effect"
)
"""The note of a claimed act whose round never ended (its worker died while or after it ran)."""

LATE_CANCEL = "cancelled by the client while the act ran: too late, the act was not interrupted"
"""The note of a call whose client cancelled it once its act had started."""

#: How often one process looks for requests that expired undecided, at most.
SWEEP_EVERY_S = 30.0
#: How often one process prunes records past the retention period, at most.
PRUNE_EVERY_S = 3600.0
#: Bytes of arguments, or of one answer, kept whole by default (``HOST_RECORD_MAX``).
DEFAULT_RECORD_MAX = LimitSettings.record_max


def outcome_of(event: Round) -> str:
    """The audit outcome of a call-ending round.

    ``declined``, ``cancelled`` or ``unticked`` when the user ended it so, ``busy`` when the
    act's lock stayed held by another call for all of its ``lock_wait``; ``acted`` when it
    finished without a tool error (``read`` for a read-only tool: it has no act);
    ``incident`` for an internal failure or an act whose outcome is unknown (each has an
    incident id); ``error`` for any other tool error or refusal; ``rejected`` or ``expired``
    when its approval request ended so, ``pending`` when the call stopped waiting for one.
    """
    if event.ending:
        return event.ending
    if event.method == "refused":
        return "refused"
    if event.approval is not None and event.approval.status in ("pending", "spent"):
        return event.approval.status
    if event.outcome == "complete":
        return "read" if event.read_only else "acted"
    if event.incident:
        return "incident"
    return "error"


def audit_record(event: Round, now: float, most: int, note: str | None = None) -> AuditRecord:
    """The record of the call ``event`` ended, at ``now`` (Unix time), fields redacted.

    Arguments, and each answer's content, over ``most`` bytes of JSON are kept bounded
    (:mod:`host.store.bounded`). ``note`` is the record's note, when not the event's own.
    """
    hidden = event.redact
    owner = event.owner or event.principal
    answers = {
        key: _answer(answer, hidden, most)
        if isinstance(answer, Mapping)
        else bounded(storable(answer), most)
        for key, answer in event.call_answers.items()
    }
    approvals = []
    for given in event.approvals:
        used: dict[str, Any] = {
            "question": given.question,
            "via": "remembered" if given.remembered else "asked",
        }
        if given.key is not None:
            used["approval"] = approval_id(owner, event.tool, given.question, given.key)
        approvals.append(used)
    if event.approval is not None:
        approvals.append(request_used(event.approval))
    started = event.call_started
    return AuditRecord(
        call_id(event.nonce),
        now,
        storable(owner),
        event.tool,
        outcome_of(event),
        arguments=bounded(_redacted(event.arguments, hidden), most),
        answers=answers,
        approvals=tuple(approvals),
        acted=event.acted or event.replayed,
        incident=event.incident,
        duration_s=max(0.0, now - started) if started else event.duration_s,
        code=event.code,
        note=note or (LATE_CANCEL if event.late_cancel else None),
    )


def _redacted(values: Mapping[str, Any], hidden: frozenset[str]) -> dict[str, Any]:
    return {k: REDACTED if k in hidden else storable(v) for k, v in values.items()}


def _answer(answer: Mapping[str, Any], hidden: frozenset[str], most: int) -> dict[str, Any]:
    """An answer as kept: its action whole, its content redacted and bounded."""
    kept: dict[str, Any] = {"action": storable(answer.get("action"))}
    content = answer.get("content")
    if isinstance(content, Mapping):
        kept["content"] = bounded(_redacted(content, hidden), most)
    return kept


class AuditObserver:
    """Writes the audit record of every call that ends and of every decision, in order.

    Args:
        store: The shared store.
        retention_s: How long records are kept.
        window_s: How long records are gathered into one write.
        record_max: Bytes of arguments, or of one answer, kept whole (larger: bounded).
        held_max: The most records held while the store refuses them (:mod:`.held`).
        retry_s: How often held records are tried again while no new record comes.
    """

    def __init__(
        self,
        store: Store,
        retention_s: float,
        *,
        window_s: float = 0.005,
        record_max: int = DEFAULT_RECORD_MAX,
        held_max: int = DEFAULT_HELD_MAX,
        retry_s: float = 1.0,
    ) -> None:
        self.store = store
        self.retention_s = retention_s
        self.record_max = record_max
        self.held = Held(held_max)
        self.retry_s = retry_s
        self._retrying = threading.Lock()
        self._next_prune = 0.0
        self._next_sweep = 0.0
        self._expired: set[str] = set()
        self._batches: Batches[_Queued] = Batches(self._write, "host-audit", window_s=window_s)

    def round_ended(self, event: Round) -> None:
        """Queue the call's record if this round ended it; nothing otherwise."""
        if event.ends:
            self._batches.put((event, time.time()))
            if event.approval is not None and event.approval.status == "expired":
                ended = event.approval
                owner = event.owner or event.principal
                self._expired.add(ended.request)
                self._batches.put(
                    decision_record(ended.request, event.tool, owner, "expired", ended.expires)
                )

    def decided(self, status: str, request: ApprovalRequest) -> None:
        """Queue the record of the decision just made on ``request`` (its newest)."""
        if request.decisions:
            made = request.decisions[-1]
            verdict = "approved" if made.verdict == "approve" else "rejected"
            self._batches.put(
                decision_record(
                    request.id, request.tool, request.caller, verdict, made.at,
                    principal=made.principal, reason=made.reason, n=len(request.decisions),
                )
            )  # fmt: skip

    def request_ended(
        self, request: ApprovalRequest, verdict: str, principal: str = HOST, reason: str = ""
    ) -> None:
        """Queue the record of ``request`` ending undecided: ``expired``, ``cancelled``,
        ``voided``. One per request and verdict, however many processes see it."""
        at = request.expires if verdict == "expired" else time.time()
        self._batches.put(
            decision_record(
                request.id, request.tool, request.caller, verdict, at,
                principal=principal, reason=reason,
            )
        )  # fmt: skip

    def lost_record(self, event: Round, within_s: float) -> Started:
        """The record of an act about to run, as if its worker died, and its retention.

        NOTE: off the batches: the core writes it with the act's claim (one durable write),
        before the act starts. Its rank is the lowest, so the call's own record, written when its
        round ends, replaces it; its time is when the round would have ended by (the act's limit
        and a lease), and readers see it only from then on, so a running act never reads as lost.
        """
        shown = time.time() + within_s + self.store.lease_s
        return audit_record(event, shown, self.record_max, LOST_NOTE), self.retention_s

    def refused(self, event: Refusal) -> None:
        """Queue the record of a request refused for its credentials (401, 403)."""
        if event.kind not in ("unauthenticated", "forbidden"):
            return
        code = 401 if event.kind == "unauthenticated" else 403
        principal = event.principal or "(unauthenticated)"
        now = time.time()
        ended = Round(
            event.tool or "", 0, principal, time.monotonic(),
            outcome="rejected", code=code, method="refused", nonce=ids.nonce(), ends=True,
            call_started=now,
        )  # fmt: skip
        self._batches.put((ended, now))

    def flush(self, timeout_s: float = 10.0) -> bool:
        """Wait until every record queued so far is written (or held); False on timeout."""
        return self._batches.flush(timeout_s)

    def _write(self, queued: Sequence[_Queued]) -> None:
        """Write the records held and one batch (on the writer's thread), in order."""
        fresh = [_ranked(item, self.record_max) for item in queued if item is not None]
        records = self.held.take() + fresh
        if not records:
            return
        try:
            self._store(records)
        except StoreError as exc:
            self._hold(records, exc)
            return
        except Exception:
            # NOTE: one record that cannot be written must not lose the other callers' records.
            log.warning(
                "a batch of audit records could not be written; writing them one by one",
                extra={"event": "audit_batch_retried", "records": len(records)},
            )
            self._write_each(records)
        if time.monotonic() >= self._next_sweep:
            self._sweep_expired()
        if time.monotonic() >= self._next_prune:
            self._prune(time.time())

    def _sweep_expired(self) -> None:
        """Queue the record of each request that expired undecided, or that a reload voided,
        since the last look.

        NOTE: an expiry is no event: nobody acts. Each process looks now and then (after a
        write, at most every :data:`SWEEP_EVERY_S`); the record's id makes it one between them.
        """
        self._next_sweep = time.monotonic() + SWEEP_EVERY_S
        now = time.time()
        try:
            requests = self.store.requests()
        except StoreError:
            return
        if len(self._expired) > 100_000:
            self._expired.clear()
        for request in requests:
            status = request.status(now)
            if request.id not in self._expired and status in ("expired", "voided"):
                self._expired.add(request.id)
                self.request_ended(request, status)

    def _write_each(self, records: Writes) -> None:
        """Write records one at a time; from the first the store refuses, hold the rest."""
        for n, one in enumerate(records):
            try:
                self._store([one])
            except StoreError as exc:
                self._hold(records[n:], exc)
                return
            except Exception as exc:
                _unwritten([one], exc)

    def _hold(self, records: Writes, exc: StoreError) -> None:
        """Hold ``records`` (in order, before any newer) and try again a little later."""
        if len(records) > len(self.held):
            log.warning(
                "audit records are held until the store takes writes again: %s",
                exc.message,
                extra={"event": "audit_held", "records": len(records)},
            )
        self.held.hold_first(records)
        if self._retrying.acquire(blocking=False):
            timer = threading.Timer(self.retry_s, self._retry)
            timer.daemon = True
            timer.start()

    def _retry(self) -> None:
        self._retrying.release()
        self._batches.put(None)

    def _store(self, records: Writes) -> None:
        self.store.write_audits(records, keep_s=self.retention_s)

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


_Queued = tuple[Round, float] | AuditRecord | None
"""What the writer is handed: a call's last round and when it ended, a decision's record, or
None (try the held records again)."""


def _ranked(item: tuple[Round, float] | AuditRecord, most: int) -> tuple[AuditRecord, int]:
    if isinstance(item, AuditRecord):
        return item, ENDED
    event, now = item
    return audit_record(event, now, most), ACTED if event.acted else ENDED


def _unwritten(records: Writes, exc: Exception) -> None:
    """Log each record given up (never its arguments)."""
    message = exc.message if isinstance(exc, StoreError) else f"{type(exc).__name__}: {exc}"
    for record, _ in records:
        log.error(
            "an audit record could not be written: %s",
            message,
            extra={
                "event": "audit_unwritten",
                "tool": record.tool,
                "principal": record.principal,
                "outcome": record.outcome,
                "call": record.id,
            },
        )
