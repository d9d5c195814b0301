"""``host``: the command line. One subcommand per module under :mod:`host.commands`.

To add a command, write ``host/commands/NAME.py`` with ``configure(parser)`` and
``run(args) -> int``, and add its name and line of help to :data:`host.commands.SUMMARIES`. Exit
codes: what the command returns; 2 for bad usage; 3 for an internal failure (a message, no
traceback unless HOST_DEBUG=1).
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys
import traceback
from collections.abc import Callable, Sequence
from types import ModuleType

from host.commands import SUMMARIES
from host.errors import HostError

__all__ = ["COMMANDS", "main"]

#: The subcommands, in the order `host --help` lists them.
COMMANDS = list(SUMMARIES)

EXIT_INTERNAL = 3


def _command(name: str) -> ModuleType:
    return importlib.import_module(f"host.commands.{name}")


def build_parser(only: str | None = None) -> argparse.ArgumentParser:
    """The ``host`` argument parser: every subcommand listed, only ``only``'s loaded and configured.

    NOTE: each command imports what it needs (``serve`` gunicorn and Falcon, ``validate`` the
    spec checker), and importing them all cost every run 0.8 s; a run of one command loads it
    alone, and the others stand as names with their line of help (``host --help`` lists them
    all, loading none).
    """
    parser = argparse.ArgumentParser(
        prog="host", description="A declarative, YAML-configured tool host for MCP."
    )
    commands = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    for name, summary in SUMMARIES.items():
        if name != only:
            commands.add_parser(name, help=summary)
            continue
        try:
            module = _command(name)
        except Exception as exc:  # one broken command must not break the others
            sub = commands.add_parser(name, help="(unavailable: it failed to load)")
            sub.add_argument("rest", nargs=argparse.REMAINDER)
            sub.set_defaults(run=_broken(name, exc))
            continue
        sub = commands.add_parser(name, help=summary, description=summary)
        module.configure(sub)
        sub.set_defaults(run=module.run)
    return parser


def _chosen(argv: Sequence[str]) -> str | None:
    """The command ``argv`` runs, when its first word names one (``host`` takes no options)."""
    first = next(iter(argv), None)
    return first if first in COMMANDS else None


def _broken(name: str, exc: Exception) -> Callable[[argparse.Namespace], int]:
    def run(args: argparse.Namespace) -> int:
        raise RuntimeError(f"the '{name}' command failed to load: {type(exc).__name__}: {exc}")

    return run


def main(argv: Sequence[str] | None = None) -> int:
    """Run ``host`` with ``argv`` (default: the process's arguments); the exit status."""
    debug = os.environ.get("HOST_DEBUG") == "1"
    try:
        words = sys.argv[1:] if argv is None else list(argv)
        parser = build_parser(_chosen(words))
        try:
            args = parser.parse_args(words)
        except SystemExit as exc:  # argparse: --help (0) or bad usage (2)
            return exc.code if isinstance(exc.code, int) else 2
        return int(args.run(args))
    except KeyboardInterrupt:
        return 130
    except HostError as exc:
        if debug:
            traceback.print_exc()
        print(f"host: {exc.message}", file=sys.stderr)
        return 1
    except Exception as exc:  # the one place that turns any failure into exit 3
        if debug:
            traceback.print_exc()
        else:
            print(
                f"host: internal error: {type(exc).__name__}: {exc} "
                "(HOST_DEBUG=1 shows the traceback)",
                file=sys.stderr,
            )
        return EXIT_INTERNAL


if __name__ == "__main__":
    sys.exit(main())
