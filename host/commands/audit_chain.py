"""``host audit verify`` and ``host audit public-key``: the audit chain, checked by anyone.

``verify`` reads every entry of the store's chain through the store, in order, and checks each
one's hash, its ``seq`` and its link to the one before (:mod:`host.store.chain_check`); with
``--public-key FILE`` (or with the host's own key, when ``HOST_AUDIT_SIGNING_KEY`` or
``HOST_SECRET`` is at hand) it checks every checkpoint's signature too. It exits 0 with
``N records, chain intact from seq A to B``, or 1 naming the first record that was edited,
deleted, inserted or reordered. ``public-key`` prints the public half of the key that signs the
checkpoints, for an auditor to keep.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Iterator
from pathlib import Path

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

from host.commands.options import open_store_of
from host.errors import HostError
from host.observers.audit_settings import AuditSettings, signer_of
from host.settings import Settings
from host.store import Store
from host.store.chain_check import ChainReport, check_chain
from host.store.signing import Signer, key_id, load_public_key

__all__ = ["run"]

_PAGE = 1000


def run(args: argparse.Namespace) -> int:
    """Run ``verify`` or ``public-key``; the exit status."""
    if args.what == "public-key":
        print(_own_signer(args).public_pem(), end="")
        return 0
    public, which = _public_key(args)
    store = open_store_of(args, say=True)
    try:
        head = store.audit_head()  # NOTE: read first: entries written meanwhile come after it
        report = check_chain(_entries(store), public)
    finally:
        store.close()
    if report.intact and (report.last or 0) < head:
        first = (report.last or 0) + 1
        gap = str(head) if first == head else f"{first} to {head}"
        report.problem = f"seq {gap} deleted: the chain's head is seq {head}"
    return _told(report, which)


def _entries(store: Store) -> Iterator[tuple[int, str, str]]:
    after = 0
    while page := store.audit_entries(after=after, limit=_PAGE):
        yield from page
        after = page[-1][0]


def _told(report: ChainReport, which: str | None) -> int:
    if not report.intact:
        where = f" (intact from seq {report.first} to {report.last})" if report.count else ""
        print(f"chain broken: {report.problem}{where}", file=sys.stderr)
        return 1
    if report.count == 0:
        print("0 records: the trail is empty")
        return 0
    print(f"{report.count} records, chain intact from seq {report.first} to {report.last}")
    if which is None:
        print(
            f"{report.checkpoints} checkpoints, signatures not checked: give --public-key FILE "
            "(host audit public-key prints it)",
            file=sys.stderr,
        )
    else:
        print(f"{report.signed} checkpoints signed by {which}", file=sys.stderr)
    return 0


def _public_key(args: argparse.Namespace) -> tuple[Ed25519PublicKey | None, str | None]:
    """The key that checks checkpoints: ``--public-key``'s, else the host's own if at hand."""
    if args.public_key is not None:
        public = load_public_key(args.public_key)
        return public, f"key {key_id(public)} ({args.public_key})"
    try:
        signer = _own_signer(args)
    except HostError:
        return None, None
    return signer.public, f"key {signer.key_id} ({signer.source})"


def _own_signer(args: argparse.Namespace) -> Signer:
    """The host's signing key, as the served host finds it (a key file, else its secret).

    Raises:
        HostError: There is no key file and no secret.
    """
    env = os.environ
    audit = AuditSettings.from_env(env)
    secrets = Settings.from_env(env).secrets
    if audit.signing_key is None and not secrets:
        folder = args.data_dir or Path(env.get("HOST_DATA_DIR") or ".host")
        kept = folder / "secret"
        if not kept.exists():
            raise HostError(
                f"no HOST_AUDIT_SIGNING_KEY, no HOST_SECRET and no {kept}: "
                "set them as the host runs with"
            )
        secrets = (kept.read_text().strip(),)
    return signer_of(audit, secrets)
