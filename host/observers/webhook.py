"""The approvals webhook: a signed POST for each new request and each decision, never in the way.

Each notification is queued and sent by one background thread per process, so no call and no
decision waits for the receiver. A receiver that fails (an error status, a refused connection, a
timeout) is tried again with backoff (1s, 2s, 4s, ... at most a minute apart) until the request
expires. The body is JSON::

    {"event": "requested" | "approved" | "rejected" | "decided",
     "request": {"id", "tool", "caller", "message", "arguments", "status", "expires", "url"},
     "text": "one line with the inbox link"}

``text`` is what Slack and Mattermost incoming webhooks show as is. With a secret, the header
``X-Host-Signature: sha256=<hex HMAC-SHA256 of the body>`` lets the receiver check the sender.
"""

from __future__ import annotations

import contextlib
import hashlib
import hmac
import json
import logging
import queue
import threading
import time
import urllib.error
import urllib.request
from dataclasses import dataclass
from typing import Any

from host.approvals.settings import ApprovalSettings
from host.store.records import iso
from host.store.requests import ApprovalRequest

__all__ = ["ApprovalsWebhook", "payload", "signature"]

log = logging.getLogger("host.approvals")

#: How long one POST may take.
TIMEOUT_S = 5.0
#: The longest pause between two tries.
MAX_BACKOFF_S = 60.0


def signature(secret: str, body: bytes) -> str:
    """The ``X-Host-Signature`` value of ``body``."""
    return "sha256=" + hmac.new(secret.encode("utf-8"), body, hashlib.sha256).hexdigest()


def payload(event: str, request: ApprovalRequest, public_url: str | None) -> dict[str, Any]:
    """The webhook's JSON body for ``event`` on ``request``."""
    url = f"{public_url}/approvals/requests/{request.id}" if public_url else None
    status = request.status(time.time())
    if event == "requested":
        text = f"{request.caller} asks for approval: {request.message}"
    else:
        by = ", ".join(d.principal for d in request.decisions) or "nobody"
        text = f"Request {request.id} ({request.tool}) is {status}, decided by {by}."
    if url:
        text += f" <{url}|Open the request>"
    return {
        "event": event,
        "request": {
            "id": request.id,
            "tool": request.tool,
            "caller": request.caller,
            "message": request.message,
            "arguments": dict(request.arguments),
            "status": status,
            "expires": iso(request.expires, ms=True),
            "url": url,
        },
        "text": text,
    }


@dataclass
class _Delivery:
    body: bytes
    until: float
    request: str
    tries: int = 0
    due: float = 0.0


class ApprovalsWebhook:
    """Sends the approvals webhook's notifications, off the request path.

    Args:
        settings: Where to send them, and the secret that signs them.
        first_backoff_s: The pause before the first retry (doubled after each).
    """

    def __init__(self, settings: ApprovalSettings, *, first_backoff_s: float = 1.0) -> None:
        self.settings = settings
        self.first_backoff_s = first_backoff_s
        self._queue: queue.Queue[_Delivery] = queue.Queue()
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()

    def requested(self, request: ApprovalRequest) -> None:
        """A call opened ``request``."""
        self.notify("requested", request)

    def decided(self, status: str, request: ApprovalRequest) -> None:
        """An approver decided ``request``, which now reads ``status``."""
        self.notify(status if status in ("approved", "rejected") else "decided", request)

    def notify(self, event: str, request: ApprovalRequest) -> None:
        """Queue one notification; returns at once."""
        if self.settings.webhook is None:
            return
        body = json.dumps(
            payload(event, request, self.settings.public_url), ensure_ascii=False
        ).encode("utf-8")
        self._queue.put(_Delivery(body, request.expires, request.id))
        self._start()

    def _start(self) -> None:
        with self._lock:
            if self._thread is None or not self._thread.is_alive():
                self._thread = threading.Thread(
                    target=self._run, name="host-approvals-webhook", daemon=True
                )
                self._thread.start()

    def _run(self) -> None:
        waiting: list[_Delivery] = []
        while True:
            timeout = min((d.due for d in waiting), default=time.monotonic() + 60.0)
            with contextlib.suppress(queue.Empty):
                waiting.append(self._queue.get(timeout=max(0.0, timeout - time.monotonic())))
            now = time.monotonic()
            for delivery in [d for d in waiting if d.due <= now]:
                waiting.remove(delivery)
                if not self._send(delivery) and time.time() < delivery.until:
                    backoff = min(MAX_BACKOFF_S, self.first_backoff_s * 2**delivery.tries)
                    delivery.tries += 1
                    delivery.due = time.monotonic() + backoff
                    waiting.append(delivery)

    def _send(self, delivery: _Delivery) -> bool:
        url = self.settings.webhook
        assert url is not None
        headers = {"Content-Type": "application/json", "User-Agent": "host-approvals"}
        if self.settings.webhook_secret:
            headers["X-Host-Signature"] = signature(self.settings.webhook_secret, delivery.body)
        request = urllib.request.Request(url, delivery.body, headers, method="POST")
        try:
            with urllib.request.urlopen(request, timeout=TIMEOUT_S) as response:
                status: int = response.status
                return 200 <= status < 300
        except (urllib.error.URLError, OSError, ValueError) as exc:
            log.warning(
                "the approvals webhook failed: %s",
                exc,
                extra={"event": "webhook_failed", "request": delivery.request,
                       "tries": delivery.tries + 1},
            )  # fmt: skip
            return False
