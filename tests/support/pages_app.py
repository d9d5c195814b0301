"""``app`` for gunicorn in the browser tests: the host's app, its inbox a :class:`MemoryApprovals`.

Configured by ``HOST_*`` variables like ``host.web.wsgi``, plus ``HOST_TEST_INBOX`` (the seed's
JSON file). One worker: the requests live in its memory.
"""

from __future__ import annotations

from host.web.app import create_app
from support.inbox_memory import MemoryApprovals

__all__ = ["app"]

app = create_app(approvals=MemoryApprovals.from_env())
