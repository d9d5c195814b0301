"""``host token create|list|revoke``: the static tokens a host accepts (``HOST_AUTH_TOKENS``).

``create NAME --scopes a,b`` prints the new token once, on stdout alone (so a script can capture
it), and stores only its digest. A running host stops accepting a revoked token within seconds.
Exit status: 0 done, 1 refused (a name taken or unknown, a bad scope, an unusable file), 2 for bad
usage.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

from host.auth.errors import AuthSettingsError
from host.auth.scopes import split_scopes
from host.auth.tokenfile import create_token, ensure_directory, read_tokens, revoke_token

__all__ = ["configure", "run"]


def configure(parser: argparse.ArgumentParser) -> None:
    """Add ``host token``'s subcommands to its subparser."""
    parser.description = (
        "Manage the static tokens file (default: $HOST_AUTH_TOKENS). Only each token's SHA-256 "
        "digest is stored, with its name (the caller's principal) and scopes."
    )
    actions = parser.add_subparsers(dest="action", metavar="ACTION", required=True)
    create = actions.add_parser(
        "create", help="make a new token and print it once", description="Make a new token, "
        "store its digest, and print the token on stdout. It cannot be shown again."
    )  # fmt: skip
    create.add_argument("name", metavar="NAME", help="the token's name: the caller's principal")
    create.add_argument(
        "--scopes", default="", metavar="A,B", help="scopes the token grants, comma-separated"
    )
    listing = actions.add_parser("list", help="list the tokens (names, scopes, creation times)")
    listing.add_argument("--format", choices=("text", "json"), default="text")
    revoke = actions.add_parser("revoke", help="remove a token; running hosts refuse it in seconds")
    revoke.add_argument("name", metavar="NAME")
    for sub in (create, listing, revoke):
        sub.add_argument(
            "--file", type=Path, metavar="PATH", help="the tokens file (default: $HOST_AUTH_TOKENS)"
        )


def run(args: argparse.Namespace) -> int:
    """Do the action; the exit status (see the module's docstring)."""
    path = args.file or _from_env()
    if path is None:
        print(
            "host token: no tokens file: set HOST_AUTH_TOKENS (as the host is run with) or pass "
            "--file PATH",
            file=sys.stderr,
        )
        return 2
    try:
        if args.action == "create":
            return _create(path, args.name, split_scopes(args.scopes))
        if args.action == "list":
            return _list(path, args.format)
        record = revoke_token(path, args.name)
    except AuthSettingsError as exc:
        print(f"host token: {exc.message}", file=sys.stderr)
        return 1
    print(
        f"Revoked token {record.name!r}; running hosts refuse it within seconds.", file=sys.stderr
    )
    return 0


def _from_env() -> Path | None:
    value = os.environ.get("HOST_AUTH_TOKENS", "").strip()
    return Path(value) if value else None


def _create(path: Path, name: str, scopes: list[str]) -> int:
    if ensure_directory(path):
        print(
            f"Created the directory {path.parent} (mode 0700) for the tokens file.", file=sys.stderr
        )
    token, record = create_token(path, name, scopes)
    granted = ", ".join(record.scopes) or "no scopes"
    print(
        f"Created token {name!r} ({granted}) in {path}. It is shown once, below; keep it secret.",
        file=sys.stderr,
    )
    print(token)
    return 0


def _list(path: Path, fmt: str) -> int:
    records = read_tokens(path)
    if fmt == "json":
        rows = [{"name": r.name, "scopes": list(r.scopes), "created": r.created} for r in records]
        print(json.dumps(rows, indent=2))
        return 0
    if not records:
        print(f"no tokens in {path}", file=sys.stderr)
        return 0
    width = max(4, *(len(r.name) for r in records))
    print(f"{'NAME':<{width}}  {'CREATED':<20}  SCOPES")
    for r in records:
        print(f"{r.name:<{width}}  {r.created:<20}  {' '.join(r.scopes) or '-'}")
    return 0
