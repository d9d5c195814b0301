"""``host approvals pending|show|approve|reject``: approval requests on a running host.

They talk to the host's approvals API (``--url BASE``, the host's base URL as in
``HOST_PUBLIC_URL``; ``--token`` or ``HOST_TOKEN``, a bearer token of the approver), so the
host checks the same rights as for its inbox: ``pending`` lists what this person may decide,
``show ID`` prints one (its questions as the caller answered them, its decisions and what became
of the call), ``approve ID [--reason R]`` and ``reject ID --reason R`` decide one. Exit status:
0 done, 1 refused (403: the caller themself or no approver scope; 404; 409: no longer pending;
401; the host unreachable), 2 for bad usage, 3 when the host's store cannot be used now (503: try
again after a few seconds; a decision sent again is recorded once).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
import urllib.error
import urllib.request
from typing import Any

from host.auth.names import shown
from host.commands.printable import json_text, printable
from host.store.records import parse_iso

__all__ = ["ACTIONS", "configure", "run"]

ACTIONS = ("pending", "show", "approve", "reject")
API = "/approvals/api/requests"


def configure(actions: Any) -> None:
    """Add ``pending``, ``show``, ``approve`` and ``reject`` to ``host approvals``."""
    pending = actions.add_parser("pending", help="list the requests you may decide (on a host)")
    show = actions.add_parser("show", help="one request: questions, decisions, outcome (on a host)")
    show.add_argument("id", metavar="ID", help="the request's id")
    for sub in (pending, show):
        sub.add_argument("--format", choices=("text", "json"), default="text")
    approve = actions.add_parser("approve", help="approve a request on a running host")
    reject = actions.add_parser("reject", help="reject a request on a running host")
    for sub in (approve, reject):
        sub.add_argument("id", metavar="ID", help="the request's id (from pending)")
        sub.add_argument("--reason", metavar="R", required=sub is reject, default="", help="why")
    for sub in (pending, show, approve, reject):
        sub.add_argument(
            "--url",
            metavar="BASE",
            default=os.environ.get("HOST_PUBLIC_URL") or "http://127.0.0.1:8000",
            help="the host's base URL (HOST_PUBLIC_URL; default http://127.0.0.1:8000)",
        )
        sub.add_argument("--token", metavar="T", help="your bearer token (default: HOST_TOKEN)")


def run(args: argparse.Namespace) -> int:
    """Do the action against the host; the exit status (see the module's docstring)."""
    token = args.token or os.environ.get("HOST_TOKEN", "").strip()
    if not token:
        print("host approvals: give --token or set HOST_TOKEN", file=sys.stderr)
        return 2
    base = args.url.rstrip("/") + API
    if args.action == "pending":
        status, body = _call("GET", base + "?status=pending", token)
    elif args.action == "show":
        status, body = _call("GET", f"{base}/{args.id}", token)
    else:
        body_in = {"reason": args.reason}
        status, body = _call("POST", f"{base}/{args.id}/{args.action}", token, body_in)
    if status == 503:
        wait = body.get("retry_after") or "a few"
        print(
            f"host approvals: the host cannot use its store now (503); nothing is lost: "
            f"try again in {wait} seconds (a decision sent again is recorded once)",
            file=sys.stderr,
        )
        return 3
    if status != 200:
        message = body.get("message") or body.get("error_description") or body.get("error")
        if status == 401:
            message = "the token was refused (unknown, revoked or expired): use a current one"
        print(f"host approvals: refused ({status}): {message}", file=sys.stderr)
        return 1
    if args.action == "show":
        return _show(body, args.format)
    if args.action != "pending":
        who = ", ".join(shown(p) for p in body.get("approved_by") or []) or "nobody yet"
        _say(f"{body['id']} is {body['status']} (approved by {who})")
        return 0
    return _pending(body["requests"], args.format)


def _call(method: str, url: str, token: str, body: Any = None) -> tuple[int, dict[str, Any]]:
    data = None if body is None else json.dumps(body).encode("utf-8")
    headers = {"Authorization": f"Bearer {token}", "Accept": "application/json"}
    if data is not None:
        headers["Content-Type"] = "application/json"
    request = urllib.request.Request(url, data, headers, method=method)
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            return int(response.status), json.loads(response.read() or b"{}")
    except urllib.error.HTTPError as exc:
        try:
            found = json.loads(exc.read() or b"{}")
        except ValueError:
            found = {"error": exc.reason}
        if not isinstance(found, dict):
            found = {"error": exc.reason}
        if exc.headers.get("Retry-After"):
            found["retry_after"] = exc.headers["Retry-After"]
        return exc.code, found
    except (urllib.error.URLError, OSError) as exc:
        return 0, {"error": f"cannot reach {url}: {exc}"}


def _pending(requests: list[dict[str, Any]], fmt: str) -> int:
    if fmt == "json":
        print(json_text(requests, indent=2))
        return 0
    if not requests:
        print("no requests are waiting for you", file=sys.stderr)
        return 0
    now = time.time()
    for item in requests:
        left = max(0, int(parse_iso(item["expires"]) - now))
        got = f"{len(item['approved_by'])}/{item['needed']}"
        _say(f"{item['id']}  {item['tool']}  by {shown(item['caller'])}  {got}  {left}s left")
        _say(f"    {item['message']}")
        _say(f"    arguments: {json_text(item['arguments'])}")
        if item.get("cut"):
            # NOTE: kept as digest, size and prefix; the approval still binds the whole value
            _say(f"    cut (too large to keep whole): {', '.join(item['cut'])}")
    return 0


def _show(item: dict[str, Any], fmt: str) -> int:
    if fmt == "json":
        print(json_text(item, indent=2))
        return 0
    outcome = f", {item['outcome']}" if item.get("outcome") else ""
    _say(f"{item['id']}  {item['tool']}  by {shown(item['caller'])}  {item['status']}{outcome}")
    _say(f"    {item['message']}")
    for question in item.get("questions") or ():
        _say(f"    asked: {question.get('message', '')}  ->  {_answered(question)}")
    _say(f"    arguments: {json_text(item['arguments'])}")
    for decision in item.get("decisions") or ():
        reason = f" {json_text(decision['reason'])}" if decision.get("reason") else ""
        verdict = {"approve": "approved", "reject": "rejected"}.get(decision["verdict"])
        _say(f"    {verdict or decision['verdict']} by {shown(decision['principal'])}{reason}")
    return 0


def _say(text: str) -> None:
    """Print one line of a request: what a caller wrote in it cannot forge or reorder a line."""
    print(printable(text))


def _answered(question: dict[str, Any]) -> str:
    """The caller's answer in words, as the request page says it."""
    fields = question.get("fields") or []
    if question.get("action") != "accept":
        return {"decline": "declined", "cancel": "dismissed"}.get(question["action"], "?")
    if question.get("kind") == "confirm":
        ticked = any(f.get("name") == "confirm" and f.get("value") is True for f in fields)
        return "yes" if ticked else "not ticked"
    said = (f"{f.get('label')}: {json_text(f.get('value'))}" for f in fields)
    return "; ".join(said) or "accepted"
