"""``host approvals pending|approve|reject``: decide approval requests on a running host.

They talk to the host's approvals API (``--url BASE``, the host's base URL as in
``HOST_PUBLIC_URL``; ``--token`` or ``HOST_TOKEN``, a bearer token of the approver), so the
host checks the same rights as for its inbox: ``pending`` lists what this person may decide,
``approve ID [--reason R]`` and ``reject ID --reason R`` decide one. Exit status: 0 done, 1
refused (403: the caller themself or no approver scope; 404; 409: no longer pending; 401; the
host unreachable), 2 for bad usage.
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

from host.store.records import parse_iso

__all__ = ["ACTIONS", "configure", "run"]

ACTIONS = ("pending", "approve", "reject")
API = "/approvals/api/requests"


def configure(actions: Any) -> None:
    """Add ``pending``, ``approve`` and ``reject`` to ``host approvals``'s subcommands."""
    pending = actions.add_parser("pending", help="list the requests you may decide (on a host)")
    pending.add_argument("--format", choices=("text", "json"), default="text")
    approve = actions.add_parser("approve", help="approve a request on a running host")
    reject = actions.add_parser("reject", help="reject a request on a running host")
    for sub in (approve, reject):
        sub.add_argument("id", metavar="ID", help="the request's id (from pending)")
        sub.add_argument("--reason", metavar="R", required=sub is reject, default="", help="why")
    for sub in (pending, approve, reject):
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
    else:
        body_in = {"reason": args.reason}
        status, body = _call("POST", f"{base}/{args.id}/{args.action}", token, body_in)
    if status != 200:
        message = body.get("message") or body.get("error_description") or body.get("error")
        print(f"host approvals: refused ({status}): {message}", file=sys.stderr)
        return 1
    if args.action != "pending":
        who = ", ".join(body.get("approved_by") or []) or "nobody yet"
        print(f"{body['id']} is {body['status']} (approved by {who})")
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
            return exc.code, json.loads(exc.read() or b"{}")
        except ValueError:
            return exc.code, {"error": exc.reason}
    except (urllib.error.URLError, OSError) as exc:
        return 0, {"error": f"cannot reach {url}: {exc}"}


def _pending(requests: list[dict[str, Any]], fmt: str) -> int:
    if fmt == "json":
        print(json.dumps(requests, indent=2, ensure_ascii=False))
        return 0
    if not requests:
        print("no requests are waiting for you", file=sys.stderr)
        return 0
    now = time.time()
    for item in requests:
        left = max(0, int(parse_iso(item["expires"]) - now))
        got = f"{len(item['approved_by'])}/{item['needed']}"
        print(f"{item['id']}  {item['tool']}  by {item['caller']}  {got}  {left}s left")
        print(f"    {item['message']}")
        print(f"    arguments: {json.dumps(item['arguments'], ensure_ascii=False)}")
    return 0
