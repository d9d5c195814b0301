"""``host audit``: the audit trail, one record per call that ended and per decision, newest first.

Each call's record says when it ended, who called which tool, its arguments, the answers given,
the approvals it went past (asked, remembered, or an approval request with every decision on it:
``approved by bob 20:12Z "checked the dashboard"``), how it ended, its incident id and how long it
took; a decision's record says who decided which request, how, why and when. Fields a tool
redacts read ``[redacted]``. Whatever callers sent is printed safely: in text, control and bidi
characters as escapes (one line per record); ``--format json`` is always valid JSON, times in ISO
8601 UTC. The store is found as ``host serve`` finds it, and named on stderr. ``--follow`` then
prints records as they are written. ``host audit verify`` and ``host audit public-key`` are in
:mod:`host.commands.audit_chain`. Exit status: 0, 1 when the store cannot be opened (``verify``:
or the chain is broken), 2 for bad usage.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from host.auth.names import shown
from host.commands.options import add_store, open_store_of
from host.commands.printable import json_text, printable
from host.spec.durations import DurationError, parse_duration
from host.store import Store
from host.store.records import AuditRecord, iso

__all__ = ["configure", "run"]


def configure(parser: argparse.ArgumentParser) -> None:
    """Add ``host audit``'s arguments to its subparser."""
    parser.description = (
        "Show the audit trail, newest first, from the host's store (the same --store and "
        "--data-dir, or HOST_STORE and HOST_DATA_DIR, the host runs with); `verify` checks "
        "its chain, `public-key` prints the key that checks its checkpoints."
    )
    parser.add_argument(
        "what",
        nargs="?",
        choices=("verify", "public-key"),
        help="verify: check every record's hash and link, and the checkpoints' signatures; "
        "public-key: print the public key of the checkpoints' signing key",
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
    parser.add_argument(
        "--follow", action="store_true", help="then print records as they are written"
    )
    parser.add_argument(
        "--public-key",
        type=Path,
        metavar="FILE",
        help="verify: check the checkpoints with this Ed25519 public key (PEM)",
    )
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
    if args.what is not None:
        from host.commands.audit_chain import run as chain_run

        return chain_run(args)
    since = None if args.since is None else time.time() - args.since
    store = open_store_of(args, say=True)
    try:
        head = store.audit_head() if args.follow else 0
        records = store.audit_records(
            tool=args.tool, principal=args.principal, since=since, limit=args.limit
        )
        if args.follow:
            _print(args.format, records[::-1], stream=True)
            return follow(store, args, head)
    finally:
        store.close()
    if not records and args.format == "text":
        print("no calls recorded (that match)", file=sys.stderr)
    _print(args.format, records)
    return 0


def _print(form: str, records: Sequence[AuditRecord], *, stream: bool = False) -> None:
    """Print records as text lines, a JSON array, or (``stream``) one JSON object a line."""
    if form == "json" and not stream:
        print(json_text([r.describe() for r in records], indent=2))
        return
    for record in records:
        print(json_text(record.describe()) if form == "json" else line(record), flush=stream)


def follow(store: Store, args: argparse.Namespace, after: int, every_s: float = 0.5) -> int:
    """Print each record written after seq ``after`` that matches, as it comes (until ^C)."""
    while True:
        entries = store.audit_entries(after=after, limit=500)
        if not entries:
            time.sleep(every_s)
            continue
        after = entries[-1][0]
        records = [AuditRecord.from_entry(json.loads(body), h) for _, body, h in entries]
        shown = [r for r in records if _followed(r, args.tool, args.principal)]
        _print(args.format, shown, stream=True)


def _followed(record: AuditRecord, tool: str | None, principal: str | None) -> bool:
    """Whether ``--follow`` prints ``record``: no checkpoint, no act about to run (the record
    of its end shows it), and the filters given."""
    if record.kind in ("checkpoint", "started"):
        return False
    return tool in (None, record.tool) and principal in (None, record.principal)


def line(record: AuditRecord) -> str:
    """One record as one line of text, whatever its fields hold (see :func:`printable`)."""
    if record.kind == "decision":
        return _decision_line(record)
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


def _decision_line(record: AuditRecord) -> str:
    """A decision's record: when, who, the tool, and the request with how it was decided."""
    detail = record.detail
    said = _said(str(detail.get("verdict")), record.principal, record.time, detail.get("reason"))
    parts = [iso(record.time), record.principal, record.tool, "decision",
             f"request {detail.get('request')} {said}"]  # fmt: skip
    return "  ".join(printable(part) for part in parts)


def _approval(used: Mapping[str, Any]) -> str:
    """A confirm gone past (``restart (asked)``), or an approval request and every decision."""
    if "request" not in used or used.get("via") != "approvers":
        return f"{used.get('question')} ({used.get('via')})"
    decisions = [
        _said(
            "approved" if d.get("verdict") == "approve" else "rejected",
            d.get("principal"),
            d.get("time", d.get("at")),
            d.get("reason"),
        )
        for d in used.get("decisions") or ()
        if isinstance(d, Mapping)
    ]
    told = ": " + ", ".join(decisions) if decisions else ": no decision"
    return f"request {used['request']} {used.get('status')}{told}"


def _said(verdict: str, who: Any, when: Any, reason: Any) -> str:
    """``approved by bob 20:12Z "checked the dashboard"`` (the reason when there is one)."""
    if isinstance(when, int | float):
        at = iso(when)[11:16] + "Z"
    elif isinstance(when, str) and len(when) >= 16:
        at = when[11:16] + "Z"
    else:
        at = "?"
    who_text = f" by {shown(str(who))}" if who != "(host)" else ""
    said = f"{verdict}{who_text} {at}"
    if reason:
        said += " " + json.dumps(str(reason), ensure_ascii=False)
    return said


def _action(answer: Any) -> str:
    if not isinstance(answer, dict):
        return "?"
    content = answer.get("content")
    shown = json.dumps(content, ensure_ascii=False, separators=(",", ":")) if content else ""
    return f"{answer.get('action')}{shown}"
