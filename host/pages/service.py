"""What the inbox pages ask of the approvals core: an :class:`Inbox`, and what it answers.

The pages depend on this interface only; the approvals core implements it (and the app is given
one), so the core never imports the pages.
"""

from __future__ import annotations

from typing import Protocol

from host.approvals.inbox import Decision, InboxRequest
from host.auth import Identity
from host.errors import Conflict, Forbidden, NotFound

__all__ = [
    "EMPTY_INBOX",
    "Conflict",
    "Decision",
    "EmptyInbox",
    "Forbidden",
    "Inbox",
    "InboxRequest",
    "NotFound",
]


class Inbox(Protocol):
    """The approval requests, as the person signed in may see and decide them."""

    def current(self, who: Identity) -> Identity:
        """``who`` established again now; raises :class:`host.auth.AuthError` if they may not."""
        ...

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


class EmptyInbox:
    """The service of a host whose specs ask nobody for approval: nothing to decide."""

    def current(self, who: Identity) -> Identity:
        """``who`` as given: nothing here can be decided."""
        return who

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


EMPTY_INBOX: Inbox = EmptyInbox()
