"""``host sessions list|revoke``: the people signed in to the pages (the approvals inbox, asks).

Sessions live in the store the host runs with (the same ``--store`` and ``--data-dir``, or
``HOST_STORE`` and ``HOST_DATA_DIR``). ``list`` shows the live sessions, each with the ``session``
that ``revoke ID`` takes; ``revoke --principal P`` ends every session of one person, and
``revoke --all`` every session. A revoked session's cookie stops working at once, on every
worker and instance. Exit status: 0 done, 1 refused (a session that is not live, a store that
cannot be opened), 2 for bad usage.
"""

from __future__ import annotations

import argparse
import json
import sys

from host.commands.options import add_store, open_store_of
from host.store.sessions import PageSession

__all__ = ["configure", "run"]


def configure(parser: argparse.ArgumentParser) -> None:
    """Add ``host sessions``'s subcommands to its subparser."""
    parser.description = (
        "The people signed in to the host's pages, kept in its store (the same --store and "
        "--data-dir, or HOST_STORE and HOST_DATA_DIR, the host runs with)."
    )
    actions = parser.add_subparsers(dest="action", metavar="ACTION", required=True)
    listing = actions.add_parser("list", help="list the live sessions, with their ids")
    listing.add_argument("--principal", metavar="P", help="only those of this person")
    listing.add_argument("--format", choices=("text", "json"), default="text")
    revoke = actions.add_parser(
        "revoke",
        help="end sessions: one by id, every one of a person, or all",
        description="End sessions. Their cookies stop working at once; people sign in again.",
    )
    revoke.add_argument("id", nargs="?", metavar="ID", help="the session's id (from list)")
    revoke.add_argument("--principal", metavar="P", help="every session of this person")
    revoke.add_argument("--all", action="store_true", help="every session of everyone")
    for sub in (listing, revoke):
        add_store(sub)


def run(args: argparse.Namespace) -> int:
    """Do the action; the exit status (see the module's docstring)."""
    if args.action == "revoke" and not (args.id or args.principal or args.all):
        print("host sessions revoke: give an ID, --principal P or --all", file=sys.stderr)
        return 2
    store = open_store_of(args)
    try:
        if args.action == "list":
            return _list(store.sessions.listed(args.principal), args.format)
        count = store.sessions.revoke(args.id, args.principal)
    finally:
        store.close()
    if args.id and not count:
        print(
            f"host sessions: no session {args.id!r} is live (it may have ended, or belong to "
            "another principal); see host sessions list",
            file=sys.stderr,
        )
        return 1
    print(f"Ended {count} session{'' if count == 1 else 's'}.", file=sys.stderr)
    return 0


def _list(sessions: list[PageSession], fmt: str) -> int:
    described = [s.describe() for s in sessions]
    if fmt == "json":
        print(json.dumps(described, indent=2, ensure_ascii=False))
        return 0
    if not described:
        print("nobody is signed in", file=sys.stderr)
        return 0
    header = {"session": "SESSION", "principal": "PRINCIPAL", "method": "METHOD",
              "created": "SIGNED IN", "expires": "EXPIRES", "scopes": "SCOPES"}  # fmt: skip
    rows = [header, *({**d, "scopes": " ".join(d["scopes"])} for d in described)]
    names = list(header)
    widths = {n: max(len(str(r[n])) for r in rows) for n in names[:-1]}
    for row in rows:
        print(*(f"{row[n]:<{widths[n]}}" for n in names[:-1]), row["scopes"], sep="  ")
    return 0
