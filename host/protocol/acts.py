"""At most once, whatever fails: every call's act through the store's act claims.

A call that asked questions has a nonce (its ledger's), the same in every round; its act runs only
under a claim on ``act:<nonce>`` that the store commits before the act starts. The act then runs
on a pooled thread under its time limit, and its result is recorded under the claim. Whatever
happens next, the act never runs again for that call, and every later round says which of these
is true, never a 500 and never a long wait:

* ``done``: the recorded result, replayed;
* ``running``: the act is still running (past its limit, on a live worker): retry for its result;
* ``lost``: the act started but its outcome is unknown: the worker running it died, or its result
  could not be written (the incident id names it in the log).

The claim carries the record the audit trail keeps if the act's worker dies (outcome
``incident``, ``acted``), written in the same durable step as the claim: the call's own record
replaces it when the round ends, so it stays only for a lost act, and a killed worker's act is
audited without a retry.

A first round's act (a tool that asks nothing) has no nonce a client could send back, so it runs
under its time limit without a claim; only that record is written before it starts, durably too.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Callable
from dataclasses import replace

from host import ids
from host.errors import ProtocolError, StoreError
from host.machine import Outcome
from host.machine.timing import RUNNER
from host.store import ActClaim, ActState, Store
from host.store.shared import Started

__all__ = ["Acts"]

log = logging.getLogger("host.protocol.acts")


class Acts:
    """The acts of one host's calls.

    Args:
        store: Where acts are claimed and recorded.
        ttl_s: How long an act's record lives: at least as long as a state can come back.
    """

    def __init__(self, store: Store, ttl_s: float) -> None:
        self.store = store
        self.ttl_s = ttl_s
        # NOTE: a retry waits a little longer than a lease for a claim that is running: enough
        # to learn that its owner died (the lease lapses unrenewed), or to get a quick result.
        self.settle_s = store.lease_s + 1.0

    def recorded(self, nonce: str, tool: str) -> Outcome | None:
        """What became of the call's act, when it was claimed in an earlier request; else None.

        NOTE: asked before the machine runs: once the act ran, its reads may no longer hold (the
        ticket is deleted), and the retry must get the act's record, not a lookup error.
        """
        state = self.store.act_state(_key(nonce))
        return None if state is None else self._settled(nonce, state, tool)

    def guard(
        self, nonce: str, tool: str, limit_s: float, lost: Callable[[str], Started | None]
    ) -> Callable[[Callable[[], Outcome]], Outcome]:
        """The ``ctx.once`` of a later round: claim with its audit record, run, record.

        ``lost`` is given the act's incident id and returns the record of the act if it is lost
        (the audit's), which the claim writes in its own durable step, so a worker that dies once
        the act ran leaves one; a store that refuses the claim raises, and the act does not run.
        """

        def once(act: Callable[[], Outcome]) -> Outcome:
            incident = _incident()
            claimed = self.store.claim_act(
                _key(nonce), ttl_s=self.ttl_s, incident=incident, audit=lost(incident)
            )
            if isinstance(claimed, ActState):
                # NOTE: a concurrent copy of this final round won the claim.
                return self._settled(nonce, claimed, tool)
            try:
                handoff = RUNNER.submit(lambda: self._run(claimed, act, tool))
            except ProtocolError:
                _record_not_started(claimed, tool, limit_s)
                raise
            try:
                return handoff.result(limit_s)
            except TimeoutError:
                if not handoff.cancel():
                    return _still_running(tool, limit_s, claimed.incident)
            # NOTE: the act was still queued for a pool thread: it never starts, and its claim
            # records that, so a retry is told it did not run (never "running", never later).
            return _record_not_started(claimed, tool, limit_s)

        return once

    def settle(self, nonce: str, outcome: Outcome, tool: str) -> Outcome:
        """A later round that did not act: if a copy of it did, answer with what became of it.

        NOTE: concurrent copies of a final round race: one acts, and the others may see the
        act's effect in their reads (a deleted ticket) and end in an error before reaching the
        guard. The effect happens only under the winner's claim, so its record is the answer.
        """
        return self.recorded(nonce, tool) or outcome

    def _settled(self, nonce: str, state: ActState, tool: str) -> Outcome:
        """What to say of an act claimed elsewhere, after waiting a little if it is running."""
        if state.status == "running":
            state = self.store.wait_act(_key(nonce), self.settle_s) or state
        return _report(state, tool)

    def first(
        self, tool: str, limit_s: float, lost: Callable[[str], Started | None]
    ) -> Callable[[Callable[[], Outcome]], Outcome]:
        """The ``ctx.once`` of a first round: its audit record written, then run under the limit.

        ``lost`` is as for :meth:`guard`; its record is written durably before the act starts.
        No claim: nothing can retry it. A store that cannot keep the record (its journal file
        cannot be written, Redis is down) refuses the act as it refuses a claim (the StoreError
        reaches the caller as HTTP 503): no act runs with nothing to audit it from.
        """

        def once(act: Callable[[], Outcome]) -> Outcome:
            incident = _incident()
            started = lost(incident)
            if started is not None:
                try:
                    self.store.act_starting(started[0], keep_s=started[1])
                except StoreError as exc:
                    log.error(
                        "an act was refused: its record could not be written before it started",
                        extra={
                            "event": "act_record_unwritten",
                            "tool": tool,
                            "incident": incident,
                            "reason": exc.message,
                        },
                    )
                    raise
            return Acts.first_round(tool, limit_s, incident)(act)

        return once

    @staticmethod
    def first_round(
        tool: str, limit_s: float, incident: str | None = None
    ) -> Callable[[Callable[[], Outcome]], Outcome]:
        """The ``ctx.once`` of a first round without its record: no claim, only the limit."""

        def once(act: Callable[[], Outcome]) -> Outcome:
            handoff = RUNNER.submit(act)
            try:
                return handoff.result(limit_s)
            except TimeoutError:
                if handoff.cancel():
                    return _not_started(tool, limit_s)
                overran_id = incident or _incident()
                log.warning(
                    "an act ran past its time limit",
                    extra={"event": "act_overran", "tool": tool, "incident": overran_id},
                )
                overran = Outcome.error(
                    f"The action of {tool} did not finish within {limit_s:g} seconds and is still "
                    f"running (incident {overran_id}); this call cannot return its result.",
                    incident=overran_id,
                )
                # NOTE: the act started and goes on: it is this call's act (metrics, audit).
                return replace(overran, acted=True)

        return once

    @staticmethod
    def _run(claim: ActClaim, act: Callable[[], Outcome], tool: str) -> Outcome:
        """Run the act and record its outcome under its claim (on a pool thread)."""
        outcome = act()
        try:
            claim.record(outcome.to_json())
        except StoreError as exc:
            # NOTE: the act happened and this caller has its result; retries will be told the
            # outcome is unknown (the claim reads lost), never run it again.
            log.error(
                "an act ran but its result could not be recorded",
                extra={
                    "event": "act_unrecorded",
                    "tool": tool,
                    "incident": claim.incident,
                    "reason": exc.message,
                },
            )
        return outcome


def _key(nonce: str) -> str:
    return "act:" + nonce


def _incident() -> str:
    return ids.incident()


def _report(state: ActState, tool: str) -> Outcome:
    """What a retry is told about an act claimed before (a replay: the act is not this round's)."""
    if state.status == "done" and state.value is not None:
        return Outcome.from_json(state.value)
    if state.status == "running":
        return replace(_still_running(tool, None, state.incident), replayed=True)
    log.warning(
        "an act's outcome is unknown",
        extra={
            "event": "act_lost",
            "tool": tool,
            "incident": state.incident,
            "reason": state.reason,
        },
    )
    lost = Outcome.error(
        f"The action of {tool} started, but its outcome is unknown: the worker running it stopped "
        f"before its result was recorded (incident {state.incident}). It will not run again for "
        "this call; check whether it took effect before you ask for it again.",
        incident=state.incident,
    )
    return replace(lost, acted=True, replayed=True)


def _record_not_started(claim: ActClaim, tool: str, limit_s: float) -> Outcome:
    """Record under ``claim`` that its act never started, so retries are told so."""
    outcome = _not_started(tool, limit_s)
    # NOTE: a failed write leaves the claim reading lost: the act still never runs for this call.
    with contextlib.suppress(StoreError):
        claim.record(outcome.to_json())
    return outcome


def _not_started(tool: str, limit_s: float) -> Outcome:
    """The act waited for a pool thread past its limit and was dropped: it did not run."""
    log.warning(
        "an act was dropped before it started",
        extra={"event": "act_not_started", "tool": tool},
    )
    return Outcome.error(
        f"The action of {tool} did not run: the host was too busy to start it within "
        f"{limit_s:g} seconds, and it will not start later. It is safe to call again.",
    )


def _still_running(tool: str, limit_s: float | None, incident: str) -> Outcome:
    """The act started and has not finished: ``acted``, so nothing else answers for it."""
    took = f" after {limit_s:g} seconds" if limit_s is not None else ""
    running = Outcome.error(
        f"The action of {tool} is still running{took} (incident {incident}). Send the same final "
        "request again (the same requestState and answers) to get its result; it will not run "
        "twice.",
        incident=incident,
    )
    return replace(running, acted=True)
