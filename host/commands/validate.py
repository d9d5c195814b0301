"""``host validate [PATH ...]``: check specs and handlers, and print every problem found.

Exit status: 0 when clean (warnings allowed unless ``--strict``), 1 when problems were found,
2 for bad usage (a PATH that does not exist), 3 for an internal failure.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from host.auth import AuthSettings
from host.commands.options import add_handlers, handlers_dir, specs_dir
from host.errors import HostError
from host.spec.check import CheckResult, check_project
from host.spec.report import format_diagnostics
from host.spec.yaml import spec_files

__all__ = ["configure", "run", "summary_line"]


def configure(parser: argparse.ArgumentParser) -> None:
    """Add ``host validate``'s arguments to its subparser."""
    parser.description = (
        "Check spec files and directories (default: $HOST_SPECS or specs) as one project and print "
        "every problem as file:line:col: severity: message [rule]. Exits 0 when clean, 1 when "
        "problems were found, 2 for bad usage."
    )
    parser.add_argument(
        "paths", nargs="*", type=Path, metavar="PATH", help="spec directories or YAML files"
    )
    add_handlers(parser)
    parser.add_argument(
        "--import",
        dest="import_handlers",
        action="store_true",
        help="also import handler modules (runs their top-level code), not only parse them",
    )
    parser.add_argument(
        "--format", choices=("text", "json", "sarif"), default="text", help="output format"
    )
    parser.add_argument("--strict", action="store_true", help="exit 1 on warnings too")
    parser.add_argument(
        "--quiet",
        "-q",
        action="store_true",
        help="no summary line on a terminal (there is none when the output is a pipe or a file)",
    )


def run(args: argparse.Namespace) -> int:
    """Validate; the exit status (see the module's docstring)."""
    paths: list[Path] = args.paths or [specs_dir(None)]
    missing = [p for p in paths if not p.exists()]
    if missing:
        for path in missing:
            print(f"host validate: {path}: no such file or directory", file=sys.stderr)
        return 2
    first = paths[0] if paths[0].is_dir() else paths[0].parent
    handlers = handlers_dir(args.handlers, first)
    result = check_project(
        paths, handlers, import_handlers=args.import_handlers, auth=_auth_configured()
    )
    output = format_diagnostics(result.diagnostics, args.format)
    if output and (result.diagnostics or args.format != "text"):
        sys.stdout.write(output)
    # NOTE: silence stays the rule for pipes and CI logs; a person at a terminal is told that the
    # check ran and what it covered, since "nothing printed" also looks like "nothing checked".
    if args.format == "text" and not args.quiet and sys.stdout.isatty():
        print(summary_line(result, len(spec_files(paths)[0])))
    if result.errors or (args.strict and result.warnings):
        return 1
    return 0


def _auth_configured() -> bool | None:
    """Whether this environment sets auth (as the host would read it); None when it cannot say.

    NOTE: scopes need auth where the host runs; validating where it runs (in its CI job, its
    container) is the common case, and elsewhere the warning says which settings to give.
    """
    try:
        return AuthSettings.from_env().enabled
    except HostError:
        return None


def summary_line(result: CheckResult, files: int) -> str:
    """One line for a terminal: what was checked and what was found."""
    where = f"{files} file{'s' if files != 1 else ''}"
    if not result.diagnostics:
        tools = len(result.project.tools) if result.project is not None else 0
        return f"ok: {tools} tool{'s' if tools != 1 else ''} in {where}, no problems"
    errors, warnings = len(result.errors), len(result.warnings)
    parts = [f"{errors} error{'s' if errors != 1 else ''}"] if errors else []
    if warnings:
        parts.append(f"{warnings} warning{'s' if warnings != 1 else ''}")
    return f"{' and '.join(parts)} in {where}"
