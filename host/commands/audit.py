"""``host audit``: the audit trail, one record per call that ended, newest first.

Each record says when the call ended, who called which tool, its arguments, the answers given,
the approvals it went past (asked, or remembered), how it ended, its incident id and how long it
took. Fields a tool redacts read ``[redacted]``. Whatever callers sent is printed safely: in text,
control and bidi characters as escapes (one line per record); ``--format json`` is always valid
JSON. Exit status: 0, 1 when the store cannot be
opened, 2 for bad usage.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Mapping
from typing import Any

from host.auth.names import shown
from host.commands.options import add_store, open_store_of
from host.commands.printable import json_text, printable
from host.spec.durations import DurationError, parse_duration
from host.store.records import AuditRecord, iso

__all__ = ["configure", "run"]


def configure(parser: argparse.ArgumentParser) -> None:
    """Add ``host audit``'s arguments to its subparser."""
    parser.description = (
        "Show the audit trail, newest first, from the host's store (the same --store and "
        "--data-dir, or HOST_STORE and HOST_DATA_DIR, the host runs with)."
    )
    parser.add_argument("--tool", metavar="T", help="only calls of this tool")
    parser.add_argument("--principal", metavar="P", help="only calls of this caller")
    parser.add_argument(
        "--since",
        type=_since,
        metavar="DURATION",
        help="only calls that ended this recently: 1h, 7d",
    )
    parser.add_argument(
        "--limit", type=_limit, default=100, metavar="N", help="at most N records (default: 100)"
    )
    parser.add_argument("--format", choices=("text", "json"), default="text")
    add_store(parser)


def _since(text: str) -> float:
    try:
        return parse_duration(text)
    except DurationError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def _limit(text: str) -> int:
    if not text.isdigit() or int(text) < 1:
        raise argparse.ArgumentTypeError(f"must be a whole number of 1 or more, not {text!r}")
    return int(text)


def run(args: argparse.Namespace) -> int:
    """Print the records; the exit status (see the module's docstring)."""
    since = None if args.since is None else time.time() - args.since
    store = open_store_of(args)
    try:
        records = store.audit_records(
            tool=args.tool, principal=args.principal, since=since, limit=args.limit
        )
    finally:
        store.close()
    if args.format == "json":
        print(json_text([r.describe() for r in records], indent=2))
        return 0
    if not records:
        print("no calls recorded (that match)", file=sys.stderr)
        return 0
    for record in records:
        print(line(record))
    return 0


def line(record: AuditRecord) -> str:
    """One record as one line of text, whatever its fields hold (see :func:`printable`)."""
    parts = [
        iso(record.time),
        shown(record.principal),
        record.tool,
        record.outcome,
        f"{record.duration_s * 1000:.0f}ms",
        json.dumps(record.arguments, ensure_ascii=False, separators=(",", ":")),
    ]
    answers = [f"{key}={_action(answer)}" for key, answer in record.answers.items()]
    if answers:
        parts.append("answers: " + " ".join(answers))
    approvals = [_approval(a) for a in record.approvals]
    if approvals:
        parts.append("approvals: " + ", ".join(approvals))
    if record.incident:
        parts.append(f"incident {record.incident}")
    if record.code is not None:
        parts.append(f"code {record.code}")
    return "  ".join(printable(part) for part in parts)


def _approval(used: Mapping[str, Any]) -> str:
    """A confirm gone past (``restart (asked)``), or an approval request and its approvers."""
    if "request" not in used or used.get("via") != "approvers":
        return f"{used.get('question')} ({used.get('via')})"
    by = ", ".join(shown(str(p)) for p in used.get("approved_by") or ()) or "nobody"
    return f"request {used['request']} {used.get('status')} by {by}"


def _action(answer: Any) -> str:
    if not isinstance(answer, dict):
        return "?"
    content = answer.get("content")
    shown = json.dumps(content, ensure_ascii=False, separators=(",", ":")) if content else ""
    return f"{answer.get('action')}{shown}"
