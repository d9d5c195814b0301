"""``host approvals remembered|revoke``: the yeses a host remembers (``remember:`` on a confirm).

(``pending``, ``approve`` and ``reject``, which decide another person's requests on a running
host, are :mod:`host.commands.decide`.)

``remembered`` shows the approvals remembered now, each with the ``id`` that ``revoke ID`` takes
(``list``, its older name, does the same and says so on stderr);
``revoke --principal P`` and ``--tool T`` forget every approval of a caller or a tool (both:
those of the caller in that tool). A running host stops honouring a revoked approval at once: it
looks each one up in the store when the confirm comes. Exit status: 0 done, 1 refused (an id
that is not remembered, a store that cannot be opened), 2 for bad usage.
"""

from __future__ import annotations

import argparse
import json
import sys

from host.commands import decide
from host.commands.options import add_store, open_store_of
from host.store.records import Approval, iso

__all__ = ["configure", "run"]


def configure(parser: argparse.ArgumentParser) -> None:
    """Add ``host approvals``'s subcommands to its subparser."""
    parser.description = (
        "Remembered yeses (remembered, revoke), kept in the host's store (the same --store and "
        "--data-dir, or HOST_STORE and HOST_DATA_DIR, the host runs with); approval requests on "
        "a running host (pending, show, approve, reject)."
    )
    actions = parser.add_subparsers(dest="action", metavar="ACTION", required=True)
    listings = [
        actions.add_parser(
            "remembered", help="list the yeses remembered now (remember:), with their ids"
        ),
        actions.add_parser("list", help="the same as remembered (its older name)"),
    ]
    for listing in listings:
        listing.add_argument("--principal", metavar="P", help="only those of this caller")
        listing.add_argument("--tool", metavar="T", help="only those of this tool")
        listing.add_argument("--format", choices=("text", "json"), default="text")
    revoke = actions.add_parser(
        "revoke",
        help="forget approvals: one by id, or every one of a caller or a tool",
        description="Forget approvals. Running hosts ask the question again at once.",
    )
    revoke.add_argument("id", nargs="?", metavar="ID", help="the approval's id (from remembered)")
    revoke.add_argument("--principal", metavar="P", help="every approval of this caller")
    revoke.add_argument("--tool", metavar="T", help="every approval of this tool")
    for sub in (*listings, revoke):
        add_store(sub)
    decide.configure(actions)


def run(args: argparse.Namespace) -> int:
    """Do the action; the exit status (see the module's docstring)."""
    if args.action in decide.ACTIONS:
        return decide.run(args)
    if args.action == "revoke" and not (args.id or args.principal or args.tool):
        print("host approvals revoke: give an ID, --principal P or --tool T", file=sys.stderr)
        return 2
    if args.action == "list":
        print(
            "host approvals: list is the older name of remembered (the yeses remembered now); "
            "requests waiting for a decision are host approvals pending",
            file=sys.stderr,
        )
    store = open_store_of(args)
    try:
        if args.action in ("remembered", "list"):
            return _list(store.approvals(principal=args.principal, tool=args.tool), args.format)
        count = store.revoke_approvals(approval=args.id, principal=args.principal, tool=args.tool)
    finally:
        store.close()
    if args.id and not count:
        print(
            f"host approvals: no approval {args.id!r} is remembered (it may have expired or been "
            "revoked, or belong to another principal or tool); see host approvals remembered",
            file=sys.stderr,
        )
        return 1
    print(
        f"Revoked {count} approval{'' if count == 1 else 's'}; the question is asked again.",
        file=sys.stderr,
    )
    return 0


def _list(approvals: list[Approval], fmt: str) -> int:
    if fmt == "json":
        print(json.dumps([a.describe() for a in approvals], indent=2, ensure_ascii=False))
        return 0
    if not approvals:
        print("no approvals are remembered", file=sys.stderr)
        return 0
    rows = [(a.id, a.principal, a.tool, a.question, iso(a.expires), a.key) for a in approvals]
    header = ("ID", "PRINCIPAL", "TOOL", "QUESTION", "EXPIRES", "KEY")
    widths = [max(len(row[i]) for row in [header, *rows]) for i in range(len(header) - 1)]
    for row in [header, *rows]:
        cells = [f"{cell:<{w}}" for cell, w in zip(row, widths, strict=False)]
        print(*cells, row[-1], sep="  ")
    return 0
