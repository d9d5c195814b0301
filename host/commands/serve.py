"""``host serve``: serve a spec directory under gunicorn, after checking it."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from host.commands.options import add_handlers, add_specs, handlers_dir, specs_dir
from host.commands.path_hint import path_hint
from host.serve import ServeOptions, serve

__all__ = ["configure", "run"]


def configure(parser: argparse.ArgumentParser) -> None:
    """Add ``host serve``'s arguments to its subparser."""
    defaults = ServeOptions()
    parser.description = (
        "Check the specs, then serve them at POST /mcp under gunicorn. Refuses to start when "
        "the specs have errors. Settings not given here come from HOST_* environment variables."
    )
    add_specs(parser)
    add_handlers(parser)
    _add_worker_options(parser, defaults)
    parser.add_argument(
        "--reload",
        action="store_true",
        help="reload when a spec or handler file changes; the new files are checked first, and "
        "on errors the old ones keep serving (as on kill -HUP)",
    )
    parser.add_argument(
        "--pin-workers",
        action="store_true",
        help="keep each worker on a CPU of its own: faster handoffs between a worker's threads, "
        "for a host that has its CPUs to itself",
    )
    parser.add_argument(
        "--data-dir",
        type=Path,
        metavar="DIR",
        help="where the store, the generated secret and handler data live "
        "(default: $HOST_DATA_DIR or .host)",
    )
    parser.add_argument(
        "--store",
        metavar="URL",
        help="sqlite:///path or redis://host:port/db (default: $HOST_STORE or a "
        "SQLite file in the data directory)",
    )
    parser.add_argument(
        "--dry-run",
        action="store_true",
        help="check the specs and print the equivalent plain gunicorn command instead of serving",
    )


def _add_worker_options(parser: argparse.ArgumentParser, defaults: ServeOptions) -> None:
    """Where to listen, and gunicorn's workers: how many, their threads, their timeout."""
    parser.add_argument(
        "--bind",
        default=defaults.bind,
        metavar="HOST:PORT",
        help=f"address to listen on (default: {defaults.bind})",
    )
    parser.add_argument(
        "--workers",
        type=int,
        default=defaults.workers,
        metavar="N",
        help=f"gunicorn worker processes (default: {defaults.workers})",
    )
    parser.add_argument(
        "--threads",
        type=int,
        default=defaults.threads,
        metavar="N",
        help="threads per worker: the most requests it holds at once, open legacy questions "
        f"among them; four run at a time (default: {defaults.threads})",
    )
    parser.add_argument(
        "--timeout",
        type=int,
        default=defaults.timeout,
        metavar="SECONDS",
        help=f"gunicorn worker timeout (default: {defaults.timeout})",
    )


def run(args: argparse.Namespace) -> int:
    """Check and serve; returns only on errors (or with ``--dry-run``)."""
    if args.workers < 1 or args.threads < 1:
        print("host serve: --workers and --threads must be at least 1")
        return 2
    specs = specs_dir(args.specs)
    options = ServeOptions(
        specs=specs, handlers=handlers_dir(args.handlers, specs), bind=args.bind,
        workers=args.workers, threads=args.threads, timeout=args.timeout, reload=args.reload,
        pin_workers=args.pin_workers, data_dir=args.data_dir, store=args.store,
    )  # fmt: skip
    if not specs.is_dir():
        print(f"host serve: no spec directory {specs}")
        return 2
    hint = path_hint()
    if hint is not None:
        print(hint, file=sys.stderr)
    result = serve(options, exec_=not args.dry_run)
    if isinstance(result, int):
        return result
    print(" ".join(result))
    return 0
