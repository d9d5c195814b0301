"""The approvals inbox: what this person may decide, one request in full, and the history."""

from __future__ import annotations

import falcon

from host.pages.service import Conflict, Forbidden, NotFound
from host.pages.session import Session
from host.pages.site import Site, guarded

__all__ = ["HistoryResource", "InboxResource", "RequestResource"]

#: The longest reason kept; longer ones are cut (a reason is read, not archived).
MAX_REASON = 2000


class InboxResource:
    """``/approvals``: the pending requests this person may decide."""

    def __init__(self, site: Site) -> None:
        self.site = site

    @guarded
    def on_get(self, req: falcon.Request, resp: falcon.Response) -> None:
        """The list, newest first."""
        session = self.site.session(req, resp)
        if session is None:
            return
        requests = sorted(self.site.service.decidable(session.identity), key=lambda r: -r.created)
        self.site.pages.render(
            resp, "inbox.html", title="Approvals", session=session, requests=requests,
            csrf=self.site.sessions.csrf(session.sid),
        )  # fmt: skip


class HistoryResource:
    """``/approvals/history``: decided and expired requests this person may see."""

    def __init__(self, site: Site) -> None:
        self.site = site

    @guarded
    def on_get(self, req: falcon.Request, resp: falcon.Response) -> None:
        """The last 50, newest first."""
        session = self.site.session(req, resp)
        if session is None:
            return
        self.site.pages.render(
            resp, "history.html", title="History", session=session,
            requests=self.site.service.history(session.identity),
            csrf=self.site.sessions.csrf(session.sid),
        )  # fmt: skip


class RequestResource:
    """``/approvals/requests/ID``: the request in full (GET), and a decision on it (POST)."""

    def __init__(self, site: Site) -> None:
        self.site = site

    @guarded
    def on_get(self, req: falcon.Request, resp: falcon.Response, request_id: str) -> None:
        """The request with its arguments and answers, and the approve and reject buttons."""
        session = self.site.session(req, resp)
        if session is None:
            return
        self._show(resp, session, request_id)

    @guarded
    def on_post(self, req: falcon.Request, resp: falcon.Response, request_id: str) -> None:
        """Approve or reject (a reason is required to reject), then back to the request."""
        session = self.site.session(req, resp)
        if session is None or not self.site.csrf_ok(req, resp, session.sid):
            return
        form = req.get_media(default_when_empty={})
        verdict = str(form.get("verdict", "")) if isinstance(form, dict) else ""
        reason = str(form.get("reason", "")).strip()[:MAX_REASON] if isinstance(form, dict) else ""
        if verdict not in ("approve", "reject"):
            self._show(resp, session, request_id, 400, "Choose approve or reject.")
            return
        if verdict == "reject" and not reason:
            self._show(
                resp, session, request_id, 400, "Say why you reject it: a reason is required."
            )
            return
        try:
            self.site.service.decide(session.identity, request_id, verdict, reason)
        except NotFound:
            self._missing(resp)
            return
        except Forbidden:
            self.site.refuse(resp, 403, "Not yours to decide", _FORBIDDEN)
            return
        except Conflict:
            self._show(
                resp, session, request_id, 409, "This request was already decided or expired."
            )
            return
        self.site.pages.redirect(resp, f"/approvals/requests/{request_id}")

    def _show(
        self, resp: falcon.Response, session: Session, request_id: str, status: int = 200,
        problem: str = "",
    ) -> None:  # fmt: skip
        try:
            request = self.site.service.get(session.identity, request_id)
        except NotFound:
            self._missing(resp)
            return
        except Forbidden:
            self.site.refuse(resp, 403, "Not yours to see", _FORBIDDEN)
            return
        self.site.pages.render(
            resp, "request.html", status, title=request.title or request.tool, session=session,
            request=request, problem=problem, csrf=self.site.sessions.csrf(session.sid),
            decidable=request.status == "pending" and request.caller != session.owner,
        )  # fmt: skip

    def _missing(self, resp: falcon.Response) -> None:
        self.site.refuse(
            resp, 404, "Not found", "There is no such request, or it is not yours to see."
        )


_FORBIDDEN = (
    "You may not decide this request: it is your own, or you hold none of the scopes its "
    "approvers need."
)
