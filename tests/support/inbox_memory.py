"""An in-memory :class:`host.pages.ApprovalsService` for the pages' tests, with the core's rules.

Pending requests are decidable by a person who holds one of the request's approver scopes and is
not its caller; one rejection ends a request, ``needed`` distinct approvals approve it. Seeded
from a list of plain dicts (a JSON file for a served host: ``HOST_TEST_INBOX``). Used as
``from support.inbox_memory import ...``.
"""

from __future__ import annotations

import json
import os
import threading
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

from host.auth import Identity, missing_scopes
from host.pages import Conflict, Decision, Forbidden, InboxRequest, NotFound

__all__ = ["MemoryApprovals", "sample_requests"]


def sample_requests(now: float | None = None) -> list[dict[str, Any]]:
    """Two pending requests by ``carol`` for ``ops:approve``, one with redacted fields."""
    now = time.time() if now is None else now
    return [
        {
            "id": "req-restart", "tool": "restart_service", "title": "Restart a service",
            "caller": "carol", "message": "carol asks to restart billing in production.",
            "arguments": {"service": "billing", "environment": "production",
                          "api_key": "[redacted]"},
            "answers": {"restart": True, "ticket": "[redacted]"},
            "approvers": ["ops:approve"], "needed": 1, "created": now - 300, "expires": now + 3300,
        },
        {
            "id": "req-rollback", "tool": "rollback_deploy", "title": "Roll back a deploy",
            "caller": "carol", "message": "carol asks to roll back checkout to v41.",
            "arguments": {"service": "checkout", "version": "v41"}, "answers": {},
            "approvers": ["ops:approve"], "needed": 1, "created": now - 60, "expires": now + 3540,
        },
    ]  # fmt: skip


class MemoryApprovals:
    """Approval requests in a dict, decided under a lock."""

    def __init__(self, seed: list[dict[str, Any]]) -> None:
        self._lock = threading.Lock()
        self._approvers: dict[str, tuple[str, ...]] = {}
        self._requests: dict[str, InboxRequest] = {}
        for item in seed:
            self._approvers[item["id"]] = tuple(item["approvers"])
            fields = {k: v for k, v in item.items() if k != "approvers"}
            self._requests[item["id"]] = InboxRequest(
                status="pending", approved_by=(), decisions=(), **fields
            )

    @classmethod
    def from_env(cls) -> MemoryApprovals:
        """Seeded from the JSON file ``HOST_TEST_INBOX`` names."""
        return cls(json.loads(Path(os.environ["HOST_TEST_INBOX"]).read_text()))

    def _may_decide(self, who: Identity, request: InboxRequest) -> bool:
        approvers = self._approvers[request.id]
        can = any(not missing_scopes(who.scopes, [scope]) for scope in approvers)
        return can and who.principal != request.caller

    def _current(self, request: InboxRequest) -> InboxRequest:
        if request.status == "pending" and request.expires <= time.time():
            request = replace(request, status="expired")
            self._requests[request.id] = request
        return request

    def current(self, who: Identity) -> Identity:
        """``who`` as given (the host's own service establishes the person again)."""
        return who

    def decidable(self, who: Identity) -> list[InboxRequest]:
        """The pending requests ``who`` may decide."""
        with self._lock:
            requests = [self._current(r) for r in self._requests.values()]
        return [r for r in requests if r.status == "pending" and self._may_decide(who, r)]

    def history(self, who: Identity, limit: int = 50) -> list[InboxRequest]:
        """The decided and expired requests ``who`` may see (approvers and callers)."""
        with self._lock:
            requests = [self._current(r) for r in self._requests.values()]
        seen = [
            r for r in requests
            if r.status != "pending" and (r.caller == who.principal or self._may_decide(who, r)
                                          or any(d.principal == who.principal for d in r.decisions))
        ]  # fmt: skip
        return sorted(seen, key=lambda r: -r.created)[:limit]

    def get(self, who: Identity, request_id: str) -> InboxRequest:
        """One request, for its caller or an approver."""
        with self._lock:
            request = self._requests.get(request_id)
            if request is None:
                raise NotFound(request_id)
            request = self._current(request)
        if request.caller != who.principal and not any(
            not missing_scopes(who.scopes, [s]) for s in self._approvers[request_id]
        ):
            raise Forbidden(request_id)
        return request

    def decide(self, who: Identity, request_id: str, verdict: str, reason: str) -> InboxRequest:
        """Approve or reject: never the caller's own, never twice."""
        with self._lock:
            request = self._requests.get(request_id)
            if request is None:
                raise NotFound(request_id)
            request = self._current(request)
            if not self._may_decide(who, request):
                raise Forbidden(request_id)
            if request.status != "pending":
                raise Conflict(request_id)
            decisions = (*request.decisions, Decision(who.principal, verdict, reason, time.time()))
            approved = request.approved_by
            if verdict == "approve" and who.principal not in approved:
                approved = (*approved, who.principal)
            status = "rejected" if verdict == "reject" else "pending"
            if status == "pending" and len(approved) >= request.needed:
                status = "approved"
            request = replace(request, status=status, approved_by=approved, decisions=decisions)
            self._requests[request_id] = request
            return request
