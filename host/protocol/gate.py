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
        progress: Where reports go while the call waits; None: nowhere.
        limit: The most requests one authenticated caller may have pending (None: no limit).
        opened: Told about each new request.
    """

    def __init__(
        self,
        store: Store,
        machine: Machine,
        principal: str,
        holder: str,
        *,
        progress: ProgressSink | None = None,
        limit: int | None = None,
        opened: Opened | None = None,
    ) -> None:
        self.store = store
        self.machine = machine
        self.principal = principal
        self.holder = holder
        self.progress = progress
        self.limit = limit
        self.opened = opened
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
        if request.status(time.time()) == "pending" and ask.wait_s > 0:
            request = self._wait(request, ask.wait_s)
        status = request.status(time.time())
        if status == "approved":
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
            message=ask.message,
            approvers=ask.approvers,
            needed=ask.count,
            arguments=_redacted(ask.arguments, machine.audit_redact),
            answers={k: _answer(v, machine.audit_redact) for k, v in ask.answers.items()},
            definition=definition,
            created=now,
            expires=now + ask.expires_s,
        )
        self._check_limit(binding)
        request = self.store.open_request(fresh)
        if request.id == fresh.id:
            log.info(
                "approval requested",
                extra={"event": "approval_requested", "tool": machine.name,
                       "principal": self.principal, "request": request.id},
            )  # fmt: skip
            if self.opened is not None:
                self.opened(request)
        return request

    def _check_limit(self, binding: str) -> None:
        """Refuse a new request past the caller's limit (an identical call's is not new)."""
        if self.limit is None or self.principal == "anonymous":
            return
        now = time.time()
        mine = [
            r
            for r in self.store.requests()
            if r.caller == self.principal and r.status(now) == "pending" and not r.told
        ]
        if len(mine) >= self.limit and all(r.binding != binding for r in mine):
            raise ProtocolError(
                LIMIT_EXCEEDED,
                f"{self.principal} has {len(mine)} approval requests pending, the most allowed "
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


def _answer(answer: Any, hidden: frozenset[str]) -> Any:
    if not isinstance(answer, Mapping):
        return answer
    kept = {k: v for k, v in answer.items() if k != "content"}
    content = answer.get("content")
    if isinstance(content, Mapping):
        kept["content"] = _redacted(content, hidden)
    return kept
