"""The approvals webhook: a signed POST for each new request and each decision, never in the way.

Each notification is queued and sent by one background thread per process, so no call and no
decision waits for the receiver. A receiver that fails (an error status, a refused connection, a
timeout) is tried again with backoff (1s, 2s, 4s, ... at most a minute apart) until the request
expires. The body is JSON::

    {"event": "requested" | "approved" | "rejected" | "decided",
     "request": {"id", "tool", "caller", "message", "arguments", "status", "expires", "url"},
     "text": "one line with the inbox link"}

``text`` is what Slack and Mattermost incoming webhooks show as is: one line, every value a caller
controls in it (the message, the caller's name, the tool) escaped for their markup (``&``, ``<``,
``>``), so its only link is the host's and no caller can ping a channel; it names the caller once.

Each POST carries ``X-Host-Event-Id`` (the same on every try of one notification, for receivers
to drop duplicates) and ``X-Host-Timestamp`` (Unix seconds, when that try was sent); with a
secret, ``X-Host-Signature: sha256=<hex HMAC-SHA256 of "<timestamp>.<body>">`` lets the receiver
check the sender and refuse a replayed old POST.
"""

from __future__ import annotations

import contextlib
import hashlib
import hmac
import json
import logging
import queue
import secrets
import threading
import time
import urllib.error
import urllib.request
from dataclasses import dataclass
from typing import Any

from host.approvals.settings import ApprovalSettings
from host.auth.names import shown
from host.store.records import iso
from host.store.requests import ApprovalRequest

__all__ = ["ApprovalsWebhook", "escaped", "payload", "signature"]

log = logging.getLogger("host.approvals")

#: How long one POST may take.
TIMEOUT_S = 5.0
#: The longest pause between two tries.
MAX_BACKOFF_S = 60.0


def signature(secret: str, timestamp: str, body: bytes) -> str:
    """The ``X-Host-Signature`` value of ``body`` sent at ``timestamp`` (Unix seconds)."""
    signed = timestamp.encode("ascii") + b"." + body
    return "sha256=" + hmac.new(secret.encode("utf-8"), signed, hashlib.sha256).hexdigest()


def escaped(text: str) -> str:
    """``text`` as Slack and Mattermost show it literally: one line, no markup of its own.

    NOTE: ``@`` is followed by a zero-width space: Mattermost notifies on a plain ``@channel``,
    ``@all`` or ``@here`` (Slack only on its ``<!channel>`` markup, escaped here too), and a
    caller's value must never ping anyone. The text reads the same to a person.
    """
    flat = " ".join(text.split())
    flat = flat.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
    return flat.replace("@", "@\u200b")


def payload(event: str, request: ApprovalRequest, public_url: str | None) -> dict[str, Any]:
    """The webhook's JSON body for ``event`` on ``request``."""
    url = f"{public_url}/approvals/requests/{request.id}" if public_url else None
    status = request.status(time.time())
    tool = escaped(request.tool)
    if event == "requested":
        text = f"Approval requested ({tool}): {escaped(request.message)}"
        if request.caller not in request.message:
            text += f" (asked by {escaped(shown(request.caller))})"
    else:
        by = ", ".join(escaped(shown(d.principal)) for d in request.decisions) or "nobody"
        text = f"Request {request.id} ({tool}) is {status}, decided by {by}."
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
    event_id: str
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
        event_id = "evt_" + secrets.token_urlsafe(16)
        self._queue.put(_Delivery(body, request.expires, request.id, event_id))
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
        timestamp = str(int(time.time()))
        headers = {"Content-Type": "application/json", "User-Agent": "host-approvals",
                   "X-Host-Event-Id": delivery.event_id, "X-Host-Timestamp": timestamp}  # fmt: skip
        if self.settings.webhook_secret:
            headers["X-Host-Signature"] = signature(
                self.settings.webhook_secret, timestamp, delivery.body
            )
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
