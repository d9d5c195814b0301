"""The approvals API: ``/approvals/api/requests...``, for chat bots, scripts and the CLI.

Every route needs a bearer token, checked as for MCP calls, and calls the approvals service, the
one the inbox pages call, so the same person has the same rights on every path:

* ``GET /approvals/api/requests?status=pending``: ``{"requests": [...]}``, the pending requests
  this person may decide; another ``status`` (``approved``, ``rejected``, ``expired``,
  ``voided``) lists the history this person may see with that status, and none lists both;
* ``GET /approvals/api/requests/ID``: one request (404 if unknown, 403 if not theirs to see);
* ``POST /approvals/api/requests/ID/approve`` and ``.../reject`` with ``{"reason": "..."}`` (in
  I-JSON, as ``/mcp`` bodies; else 400 naming what and where):
  the request as it is after the decision; 403 for the caller or a person without an approver
  scope, 409 for a request no longer pending; the same decision again (a retry whose answer
  was lost) gets 200 and the request as it is.

A store that cannot be used now (down, stopped, its disk full) is 503 with ``Retry-After`` on
every route, never 500: the client tries again, and a decision is recorded at most once.

Without auth settings the API is not served (404): nobody could be told apart.
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Callable
from typing import Any

import falcon

from host.approvals.service import ApprovalsService
from host.auth import AuthError, Identity
from host.errors import Conflict, Forbidden, HostError, NotFound, StoreError
from host.protocol import ijson
from host.web.auth import Gate

__all__ = ["API_PREFIX", "add_approvals_api"]

log = logging.getLogger("host.approvals")

API_PREFIX = "/approvals/api/requests"

_STATUSES = ("pending", "approved", "rejected", "expired", "voided", "withdrawn")
#: The largest decision body read: a reason, with room to spare.
_MOST = 64 * 1024
_SHAPE = 'the body is {"reason": "..."}'


def add_approvals_api(
    app: falcon.App[falcon.Request, falcon.Response], service: ApprovalsService, gate: Gate
) -> None:
    """Route the approvals API on ``app``."""
    app.add_route(API_PREFIX, _Requests(service, gate))
    app.add_route(API_PREFIX + "/{request_id}", _Request(service, gate))
    app.add_route(API_PREFIX + "/{request_id}/{verdict}", _Decide(service, gate))


class _Resource:
    def __init__(self, service: ApprovalsService, gate: Gate) -> None:
        self.service = service
        self.gate = gate

    def who(self, req: falcon.Request, resp: falcon.Response) -> Identity | None:
        """The person asking; None once the response says why not (401)."""
        return self.gate.identify(req, resp)


def _fail(resp: falcon.Response, exc: HostError) -> None:
    status = {NotFound: 404, Forbidden: 403, Conflict: 409}.get(type(exc), 400)
    resp.status = status
    kind = {404: "not_found", 403: "forbidden", 409: "conflict"}.get(status, "bad_request")
    resp.media = {"error": kind, "message": exc.message}


def _served(responder: Callable[..., None]) -> Callable[..., None]:
    """A responder that answers 503 with ``Retry-After`` when the store cannot be used now."""

    @functools.wraps(responder)
    def run(self: Any, req: falcon.Request, resp: falcon.Response, **params: Any) -> None:
        try:
            responder(self, req, resp, **params)
        except StoreError as exc:
            log.error(
                "approvals API unavailable: %s", exc.message,
                extra={"event": "store_unavailable", "path": req.path, "method": req.method},
            )  # fmt: skip
            resp.status = 503
            resp.set_header("Retry-After", str(StoreError.RETRY_AFTER_S))
            resp.media = {
                "error": "unavailable",
                "message": "the host cannot use its store now: try again in "
                f"{StoreError.RETRY_AFTER_S} s (a decision sent again is recorded once)",
            }

    return run


class _Requests(_Resource):
    @_served
    def on_get(self, req: falcon.Request, resp: falcon.Response) -> None:
        who = self.who(req, resp)
        if who is None:
            return
        status = req.get_param("status")
        if status is not None and status not in _STATUSES:
            resp.status = 400
            resp.media = {"error": "bad_request", "message": f"status is one of {_STATUSES}"}
            return
        found = [] if status not in (None, "pending") else self.service.decidable(who)
        if status != "pending":
            found += [r for r in self.service.history(who, 200) if status in (None, r.status)]
        resp.media = {"requests": [r.plain() for r in found]}


class _Request(_Resource):
    @_served
    def on_get(self, req: falcon.Request, resp: falcon.Response, request_id: str) -> None:
        who = self.who(req, resp)
        if who is None:
            return
        try:
            resp.media = self.service.get(who, request_id).plain()
        except (NotFound, Forbidden) as exc:
            _fail(resp, exc)


class _Decide(_Resource):
    @_served
    def on_post(
        self, req: falcon.Request, resp: falcon.Response, request_id: str, verdict: str
    ) -> None:
        who = self.who(req, resp)
        if who is None:
            return
        if verdict not in ("approve", "reject"):
            raise falcon.HTTPNotFound()
        reason = _reason(req)
        if not isinstance(reason, str):
            resp.status = 400
            resp.media = {"error": "bad_request", "message": reason.problem}
            return
        try:
            resp.media = self.service.decide(who, request_id, verdict, reason).plain()
        except AuthError as exc:  # NOTE: revoked between the door and the decision
            self.gate.refuse(resp, exc)
        except (NotFound, Forbidden, Conflict) as exc:
            _fail(resp, exc)


def _reason(req: falcon.Request) -> str | _BadBody:
    """The body's ``reason`` ('' when the body is empty), or why the body is not one.

    NOTE: parsed as I-JSON, as ``/mcp`` bodies are: a lone surrogate or ``NaN`` taken here
    would fail later, when the decision is written (and ``host audit`` prints it).
    """
    raw = req.bounded_stream.read(_MOST + 1)
    if not raw.strip():
        return ""
    if len(raw) > _MOST:
        return _BadBody(f"the body is over {_MOST // 1024} KB")
    try:
        body: Any = ijson.loads(raw)
    except ijson.StrictJsonError as exc:
        return _BadBody(f"{exc.problem} ({_SHAPE})")
    except (ValueError, RecursionError):
        return _BadBody(f"the body is not JSON ({_SHAPE})")
    if not isinstance(body, dict):
        return _BadBody(f"the body is not a JSON object ({_SHAPE})")
    reason = body.get("reason", "")
    return reason if isinstance(reason, str) else _BadBody(f"reason is not a string ({_SHAPE})")


class _BadBody:
    """Why a decision's body was refused, for the 400's message."""

    __slots__ = ("problem",)

    def __init__(self, problem: str) -> None:
        self.problem = problem
