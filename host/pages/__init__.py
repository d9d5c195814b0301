"""The host's own HTML pages: browser sign-in and the approvals inbox.

Falcon resources render Jinja2 templates (``templates/``, autoescaped) with one stylesheet served
by the host, under a strict Content-Security-Policy. The pages read and decide approval requests
through an :class:`Inbox`; the core never imports the pages. :func:`mount_pages` adds
them to the app, only where callers authenticate.
"""

from __future__ import annotations

from host.pages.mount import mount_pages
from host.pages.service import (
    EMPTY_INBOX,
    Conflict,
    Decision,
    Forbidden,
    Inbox,
    InboxRequest,
    NotFound,
)

__all__ = [
    "EMPTY_INBOX",
    "Conflict",
    "Decision",
    "Forbidden",
    "Inbox",
    "InboxRequest",
    "NotFound",
    "mount_pages",
]
