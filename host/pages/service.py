"""What the inbox pages ask of the approvals core: :class:`ApprovalsService`, and what it answers.

The pages depend on this interface only; the approvals core implements it (and the app is given
one), so the core never imports the pages.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Protocol

from host.auth import Identity

__all__ = [
    "NO_APPROVALS",
    "ApprovalsService",
    "Conflict",
    "Decision",
    "Forbidden",
    "InboxRequest",
    "NoApprovals",
    "NotFound",
]


class NotFound(Exception):
    """No such request, or none this person may see."""


class Forbidden(Exception):
    """This person may not decide this request (they made it, or hold no approver scope)."""


class Conflict(Exception):
    """The request is no longer pending (decided, expired or voided)."""


@dataclass(frozen=True)
class Decision:
    """One approver's verdict on a request."""

    principal: str
    verdict: str  # "approve" | "reject"
    reason: str
    at: float


@dataclass(frozen=True)
class InboxRequest:
    """An approval request as an approver sees it: arguments and answers already redacted."""

    id: str
    tool: str
    title: str
    caller: str
    message: str
    arguments: Mapping[str, Any]
    answers: Mapping[str, Any]
    status: str  # "pending" | "approved" | "rejected" | "expired" | "voided"
    needed: int
    approved_by: tuple[str, ...]
    decisions: tuple[Decision, ...]
    created: float
    expires: float


class ApprovalsService(Protocol):
    """The approval requests, as the person signed in may see and decide them."""

    def decidable(self, who: Identity) -> list[InboxRequest]:
        """The pending requests ``who`` may decide."""
        ...

    def history(self, who: Identity, limit: int = 50) -> list[InboxRequest]:
        """The decided and expired requests ``who`` may see, newest first."""
        ...

    def get(self, who: Identity, request_id: str) -> InboxRequest:
        """One request; raises :class:`NotFound` or :class:`Forbidden`."""
        ...

    def decide(self, who: Identity, request_id: str, verdict: str, reason: str) -> InboxRequest:
        """Approve or reject; raises :class:`Forbidden` or :class:`Conflict`."""
        ...


class NoApprovals:
    """The service of a host whose specs ask nobody for approval: nothing to decide."""

    def decidable(self, who: Identity) -> list[InboxRequest]:
        """Nothing is pending."""
        return []

    def history(self, who: Identity, limit: int = 50) -> list[InboxRequest]:
        """Nothing was decided."""
        return []

    def get(self, who: Identity, request_id: str) -> InboxRequest:
        """No request exists."""
        raise NotFound(request_id)

    def decide(self, who: Identity, request_id: str, verdict: str, reason: str) -> InboxRequest:
        """No request exists."""
        raise NotFound(request_id)


NO_APPROVALS: ApprovalsService = NoApprovals()
