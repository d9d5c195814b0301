"""``host test [PATH]``: run the ``examples:`` written in the specs, like a test runner.

Prints a line per example (``ok`` or ``FAIL`` with what differed), then ``N passed, N failed``.
Exit status: 0 when every example passed (or there are none), 1 when one failed, 2 when the specs
cannot be loaded or PATH does not exist.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from host.errors import HostError, SpecError
from host.testing.harness import load
from host.testing.runner import cases, describe_spec_error, run_cases

__all__ = ["configure", "run"]

HELP = "run the examples written in the specs"


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
    parser.add_argument(
        "--handlers",
        type=Path,
        metavar="DIR",
        help="the handlers directory (default: $HOST_HANDLERS or `handlers` beside the specs)",
    )
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
    path: Path = args.path or Path(os.environ.get("HOST_SPECS") or "specs")
    if not path.exists():
        print(f"host test: {path} does not exist", file=sys.stderr)
        return 2
    only = path if path.is_file() else None
    specs_dir = path.parent if only is not None else path
    handlers = args.handlers or (
        Path(os.environ["HOST_HANDLERS"]) if os.environ.get("HOST_HANDLERS") else None
    )
    handlers_dir = handlers or specs_dir.parent / "handlers"
    env: dict[str, str | None] = {}
    for item in args.env:
        name, sep, value = item.partition("=")
        if not sep or not name:
            print(f"host test: --env wants NAME=VALUE, got {item!r}", file=sys.stderr)
            return 2
        env[name] = value
    try:
        project = load(specs_dir, handlers_dir)
    except SpecError as exc:
        print(f"host test: the specs in {specs_dir} have errors:", file=sys.stderr)
        for line in describe_spec_error(exc):
            print(f"  {line}", file=sys.stderr)
        return 2
    except HostError as exc:
        print(f"host test: {exc}", file=sys.stderr)
        return 2
    selected = cases(project, only=only, keyword=args.keyword)
    if not selected:
        print("no examples found: add `examples:` to a tool to test it", file=out)
    summary = run_cases(project, specs_dir, handlers_dir, selected, out, env=env)
    return 1 if summary.failed else 0
