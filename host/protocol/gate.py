"""A call's ``ctx.gate``: its approval requests in the store, bound to one caller and one call.

The machine asks only with what the approve step says and what the call holds; who asks, in
which tool, under which definition and for which call are fixed here, by the core. A request is
found by its *binding* (a digest of the caller, the tool, the step, the arguments, the answers and
the tool's definition), so identical calls share it and a reload that changes the tool makes the
next call a new one. While the request is pending the call waits up to the step's ``wait``,
telling the client how it stands through progress reports when the client asked for them. An
approval is spent on one call (its nonce): a retry of that call's final round finds it spent by
itself and goes on to the act's record; any other identical call is told it went to another.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Mapping
from typing import Any

from host.errors import ProtocolError
from host.limits import LIMIT_EXCEEDED
from host.machine import Machine, ProgressSink
from host.machine.gate import ApprovalAsk, Decided
from host.protocol.digests import digest
from host.store import Store
from host.store.bounded import bounded, bounded_fields, bounded_text
from host.store.requests import ApprovalRequest, new_request_id

__all__ = ["REDACTED", "StoreGate"]

log = logging.getLogger("host.protocol")

REDACTED = "[redacted]"
"""What a redacted field reads as where approvers see the request."""

#: How often a waiting call reports how it stands, when the client asked for progress.
REPORT_EVERY_S = 5.0

Opened = Callable[[ApprovalRequest], None]
"""Told about each request a call opens (the approvals webhook listens)."""


class StoreGate:
    """The approval requests of one call of ``machine`` by ``principal``.

    Args:
        store: The shared store.
        machine: The tool called.
        principal: Who calls.
        holder: The call's nonce: what an approval is spent on.
        hold: Whether the call waits up to the step's ``wait`` (a task's round does not: the
            task is polled instead).
        progress: Where reports go while the call waits; None: nowhere.
        limit: The most requests one authenticated caller may have pending (None: no limit).
        opened: Told about each new request.
        most: Bytes of arguments (or of one answer's content) a request keeps whole
            (``HOST_RECORD_MAX``); larger fields are kept as digest, size and prefix, while the
            binding (and so the act) is bound to the full arguments' digest.
    """

    def __init__(
        self,
        store: Store,
        machine: Machine,
        principal: str,
        holder: str,
        *,
        hold: bool = True,
        progress: ProgressSink | None = None,
        limit: int | None = None,
        opened: Opened | None = None,
        most: int = 16 * 1024,
    ) -> None:
        self.store = store
        self.machine = machine
        self.principal = principal
        self.holder = holder
        self.hold = hold
        self.progress = progress
        self.limit = limit
        self.opened = opened
        self.most = most
        self.last: Decided | None = None
        """Where the call's request stood when it last asked (the record of a lost act names it)."""

    def decide(self, ask: ApprovalAsk) -> Decided:
        """Find or make the request for ``ask``, wait for it, and say where it stands."""
        self.last = self._decide(ask)
        return self.last

    def _decide(self, ask: ApprovalAsk) -> Decided:
        request = self._open(ask)
        if request.status(time.time()) == "voided":
            request = self._open(ask)  # NOTE: voiding freed the binding: this one is new
        if request.status(time.time()) == "pending" and ask.wait_s > 0 and self.hold:
            request = self._wait(request, ask.wait_s)
        status = request.status(time.time())
        if status == "approved":
            task = request.extra.get("task")
            if task is not None and task != self.holder:
                # NOTE: a task's request is spent only by that task; an identical call made
                # meanwhile is shown the request as the task will (the era finds the task).
                return _decided(request, "pending")
            if self.store.spend_request(request.id, self.holder):
                return _decided(request, "approved")
            return _decided(request, "spent")
        if status in ("rejected", "expired"):
            self.store.end_request(request.id)
            return _decided(request, status)
        if status == "voided":  # NOTE: the tool changed while the call waited
            return _decided(self._open(ask), "pending")
        return _decided(request, "pending")

    def _open(self, ask: ApprovalAsk) -> ApprovalRequest:
        machine = self.machine
        definition = machine.definition
        binding = digest(
            ["approve", self.principal, machine.name, ask.step, definition,
             dict(ask.arguments), dict(ask.answers)]
        )  # fmt: skip
        now = time.time()
        fresh = ApprovalRequest(
            id=new_request_id(),
            binding=binding,
            caller=self.principal,
            tool=machine.name,
            title=machine.title or "",
            step=ask.step,
            message=bounded_text(ask.message),
            approvers=ask.approvers,
            needed=ask.count,
            arguments=bounded_fields(_redacted(ask.arguments, machine.audit_redact), self.most),
            answers={
                k: _answer(v, machine.audit_redact, self.most) for k, v in ask.answers.items()
            },
            definition=definition,
            created=now,
            expires=now + ask.expires_s,
            extra={"questions": [_question(q, self.most) for q in ask.questions]},
        )
        limited = self.limit is not None and self.principal != "anonymous"
        request = self.store.open_request(fresh, most=self.limit if limited else None)
        if request is None:
            raise self._over_limit()
        if request.id == fresh.id:
            log.info(
                "approval requested",
                extra={"event": "approval_requested", "tool": machine.name,
                       "principal": self.principal, "request": request.id},
            )  # fmt: skip
            if self.opened is not None:
                try:
                    self.opened(request)
                except Exception:
                    # NOTE: the request is kept: a hook that fails (metrics on a full disk)
                    # must not fail the call that made it.
                    log.exception(
                        "a new request's hook failed",
                        extra={"event": "approval_hook_failed", "request": request.id},
                    )
        return request

    def _over_limit(self) -> ProtocolError:
        """The 429 of a new request past the caller's limit (an identical call's is not new)."""
        return ProtocolError(
            LIMIT_EXCEEDED,
            f"{self.principal} has {self.limit} approval requests pending, the most allowed "
            "(HOST_LIMIT_PENDING_APPROVALS); wait for them to be decided or to expire",
            {"limit": "pending_approvals", "value": self.limit, "retryAfter": 60},
            429,
        )

    def _wait(self, request: ApprovalRequest, wait_s: float) -> ApprovalRequest:
        started = time.monotonic()
        deadline = started + wait_s
        while True:
            left = deadline - time.monotonic()
            if self.progress is not None:
                self.progress(time.monotonic() - started, wait_s, _waiting(request))
            found = self.store.wait_request(request.id, min(left, REPORT_EVERY_S))
            if found is None:
                return request
            request = found
            if request.status(time.time()) != "pending" or time.monotonic() >= deadline:
                return request


def _waiting(request: ApprovalRequest) -> str:
    left = request.needed - len(request.approved_by)
    return (
        f"waiting for {left} approval{'s' if left != 1 else ''} from "
        f"{' or '.join(request.approvers)}"
    )


def _decided(request: ApprovalRequest, status: Any) -> Decided:
    return Decided(
        status,
        request.id,
        request.needed,
        request.expires,
        request.approvers,
        request.approved_by,
        request.reason,
        tuple(d.plain() for d in request.decisions),
    )


def _redacted(values: Mapping[str, Any], hidden: frozenset[str]) -> dict[str, Any]:
    return {k: REDACTED if k in hidden else v for k, v in values.items()}


def _answer(answer: Any, hidden: frozenset[str], most: int) -> Any:
    if not isinstance(answer, Mapping):
        return answer
    kept = {k: v for k, v in answer.items() if k != "content"}
    content = answer.get("content")
    if isinstance(content, Mapping):
        kept["content"] = bounded_fields(_redacted(content, hidden), most)
    return kept


def _question(question: Mapping[str, Any], most: int) -> dict[str, Any]:
    """A question as approvers see it, its message and its answer's values bounded."""
    fields = question.get("fields") or ()
    share = max(512, most // max(1, len(fields)))
    return {
        **question,
        "message": bounded_text(str(question.get("message", ""))),
        "fields": [{**f, "value": bounded(f.get("value"), share)} for f in fields],
    }
