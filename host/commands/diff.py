"""``host diff OLD NEW`` or ``host diff REV..REV``: what a spec change does, before it is made.

OLD and NEW are two spec directories (handlers beside each), or one argument ``REV..REV``: the spec
directory (``--specs``, default ``$HOST_SPECS`` or ``specs``) at two git revisions of this work
tree. Per tool: added, removed or changed (and what: :mod:`host.spec.diff`), whether its
definition digest changed, and so what a reload voids; with ``--store`` or ``--data-dir`` (else
the store ``host serve`` would use, where it exists) it counts the remembered approvals and open
approval requests a reload voids. It runs nothing (handlers are parsed, never imported) and
writes nothing. Exit status: 0 nothing a caller sees changed, 1 something did, 2 an error.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING
from urllib.parse import urlsplit, urlunsplit

from host.commands.git_trees import at_revision, split_range
from host.commands.options import add_handlers, add_specs, add_store, handlers_dir, specs_dir
from host.errors import HostError
from host.spec.check import check_project
from host.spec.diff import ProjectDiff, compare
from host.spec.diff_report import render
from host.spec.model import Project
from host.spec.paths import default_handlers_dir
from host.spec.report import format_diagnostics

if TYPE_CHECKING:
    from host.store import Store

__all__ = ["configure", "run"]


def configure(parser: argparse.ArgumentParser) -> None:
    """Add ``host diff``'s arguments to its subparser."""
    parser.description = (
        "Show what changing the specs from OLD to NEW does to a host: each tool added, removed "
        "or changed, what changed, whether its definition digest changed, and what a reload "
        "voids (counted in the store). OLD and NEW are spec directories, or give one REV..REV "
        "to compare --specs at two git revisions. Runs nothing, writes nothing. Exits 0 when "
        "nothing a caller sees changed, 1 when something did, 2 on an error."
    )
    parser.add_argument("old", metavar="OLD", help="the spec directory now, or REV..REV")
    parser.add_argument("new", metavar="NEW", nargs="?", help="the spec directory after")
    add_specs(parser, "with REV..REV: the spec directory in the work tree")
    add_handlers(parser)
    parser.add_argument(
        "--format", choices=("text", "json", "markdown"), default="text", help="output format"
    )
    add_store(parser)
    parser.add_argument(
        "--no-store", action="store_true", help="count nothing, even where a store is configured"
    )


def run(args: argparse.Namespace) -> int:
    """Compare and print; the exit status (see the module's docstring)."""
    try:
        with ExitStack() as stack:
            old, new, names = _sides(args, stack)
            diff = _with_voids(_compared(old, new, names), new, args)
    except HostError as exc:
        print(f"host diff: {exc.message}", file=sys.stderr)
        return 2
    sys.stdout.write(render(diff, args.format))
    return 1 if diff.caller_sees else 0


def _sides(args: argparse.Namespace, stack: ExitStack) -> tuple[Project, Project, tuple[str, str]]:
    """The two projects, loaded, and what to call them."""
    revisions = split_range(args.old) if args.new is None else None
    if args.new is None and revisions is None:
        raise HostError(f"give two spec directories (OLD NEW) or one REV..REV, not {args.old!r}")
    if revisions is not None:
        specs = specs_dir(args.specs)
        handlers = handlers_dir(args.handlers, specs)
        loaded = []
        for revision in revisions:
            at_specs, at_handlers = stack.enter_context(at_revision(revision, specs, handlers))
            loaded.append(_load(at_specs, at_handlers, f"{specs} at {revision}"))
        return loaded[0], loaded[1], (f"{specs}@{revisions[0]}", f"{specs}@{revisions[1]}")
    paths = [Path(args.old), Path(args.new)]
    for path in paths:
        if not path.is_dir():
            raise HostError(f"{path}: no such spec directory")
    old, new = (_load(p, args.handlers or default_handlers_dir(p), str(p)) for p in paths)
    return old, new, (args.old, args.new)


def _load(specs: Path, handlers: Path, name: str) -> Project:
    """The checked project, or an error naming its first problems."""
    result = check_project([specs], handlers, auth=True)
    if result.project is None:
        shown = format_diagnostics(result.errors[:5], "text").rstrip()
        raise HostError(f"the specs of {name} have errors:\n{shown}")
    return result.project


def _compared(old: Project, new: Project, names: tuple[str, str]) -> ProjectDiff:
    from host.machine.definition import definition_digest

    return compare(old, new, definition_digest, old_name=names[0], new_name=names[1])


def _with_voids(diff: ProjectDiff, new: Project, args: argparse.Namespace) -> ProjectDiff:
    """The diff with what a reload voids, counted in the store (when there is one to read)."""
    voiding = [t for t in diff.tools if t.digest_changed and t.old_digest is not None]
    if args.no_store or not voiding:
        return diff
    with _store(args) as (store, where, note):
        if store is None:
            return replace(diff, notes=(*diff.notes, note)) if note else diff
        from host.protocol.voids import count_voids

        counted = {
            t.name: count_voids(store, t.name, t.old_digest or "") for t in voiding
        }  # fmt: skip
    tools = tuple(replace(t, voids=counted.get(t.name, t.voids)) for t in diff.tools)
    return replace(diff, tools=tools, store=where)


@contextmanager
def _store(args: argparse.Namespace) -> Iterator[tuple[Store | None, str, str]]:
    """The store to count in, with where it is, or None and why not (it is never created)."""
    from host.store import open_store

    given = bool(args.store or args.data_dir)
    data_dir = args.data_dir or Path(os.environ.get("HOST_DATA_DIR") or ".host")
    url = args.store or os.environ.get("HOST_STORE") or f"sqlite:///{data_dir / 'store.db'}"
    if url.lower().startswith("sqlite:///") and not Path(url[len("sqlite:///") :]).exists():
        if given:
            raise HostError(f"there is no store at {url[len('sqlite:///') :]}")
        yield None, "", f"no store at {data_dir / 'store.db'}: nothing counted (give --store)"
        return
    store = open_store(url)
    try:
        yield store, _shown(url), ""
    finally:
        store.close()


def _shown(url: str) -> str:
    """The store's URL without a password."""
    parts = urlsplit(url)
    if parts.password is None:
        return url
    host = parts.hostname or ""
    netloc = f"{parts.username + '@' if parts.username else ''}{host}"
    netloc += f":{parts.port}" if parts.port else ""
    return urlunsplit(parts._replace(netloc=netloc))
