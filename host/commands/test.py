"""``host test [PATH]``: run the ``examples:`` written in the specs, like a test runner.

Prints a line per example (``ok`` or ``FAIL`` with what differed), then ``N passed, N failed``.
Exit status: 0 when every example passed (or there are none), 1 when one failed, 2 when the specs
cannot be loaded or PATH does not exist.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from host.commands.options import add_handlers, handlers_dir, specs_dir
from host.errors import HostError, SpecError
from host.testing.harness import load
from host.testing.runner import cases, describe_spec_error, run_cases

__all__ = ["configure", "run"]


def configure(parser: argparse.ArgumentParser) -> None:
    """Add ``host test``'s arguments to its subparser."""
    parser.description = (
        "Run every tool's `examples:` against the real app, each with a fresh data directory "
        "($HOST_DATA_DIR). Prints a line per example and `N passed, N failed`; exits 1 when an "
        "example fails, 2 when the specs have errors."
    )
    parser.add_argument(
        "path",
        nargs="?",
        type=Path,
        help="the spec directory, or one YAML file in it (default: $HOST_SPECS or specs)",
    )
    add_handlers(parser)
    parser.add_argument(
        "-k",
        dest="keyword",
        metavar="TEXT",
        help="run only the examples whose `tool > name` contains TEXT",
    )
    parser.add_argument(
        "--env",
        action="append",
        default=[],
        metavar="NAME=VALUE",
        help="set a variable for the handlers; `{data_dir}` in VALUE is the example's data "
        "directory (repeatable)",
    )


def run(args: argparse.Namespace) -> int:
    """Run the examples; the exit status (see the module's docstring)."""
    out = sys.stdout
    path = specs_dir(args.path)
    if not path.exists():
        print(f"host test: {path} does not exist", file=sys.stderr)
        return 2
    only = path if path.is_file() else None
    specs = path.parent if only is not None else path
    handlers = handlers_dir(args.handlers, specs)
    env: dict[str, str | None] = {}
    for item in args.env:
        name, sep, value = item.partition("=")
        if not sep or not name:
            print(f"host test: --env wants NAME=VALUE, got {item!r}", file=sys.stderr)
            return 2
        env[name] = value
    try:
        project = load(specs, handlers)
    except SpecError as exc:
        print(f"host test: the specs in {specs} have errors:", file=sys.stderr)
        for line in describe_spec_error(exc):
            print(f"  {line}", file=sys.stderr)
        return 2
    except HostError as exc:
        print(f"host test: {exc}", file=sys.stderr)
        return 2
    selected = cases(project, only=only, keyword=args.keyword)
    if not selected:
        print("no examples found: add `examples:` to a tool to test it", file=out)
    summary = run_cases(project, specs, handlers, selected, out, env=env)
    return 1 if summary.failed else 0
