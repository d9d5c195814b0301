"""``host stdio``: serve the specs over stdin/stdout, for clients that launch their servers."""

from __future__ import annotations

import argparse
import sys

from host.commands.options import add_handlers, add_specs
from host.errors import SpecError
from host.spec.report import format_diagnostics
from host.stdio import main

__all__ = ["configure", "run"]


def configure(parser: argparse.ArgumentParser) -> None:
    """Add ``host stdio``'s arguments to its subparser."""
    parser.description = (
        "Serve the specs over stdin/stdout, one JSON-RPC message per line, for MCP clients that "
        "launch their servers as processes (both modern requests and legacy sessions). Logs go to "
        "stderr. Settings not given here come from HOST_* environment variables."
    )
    add_specs(parser)
    add_handlers(parser)


def run(args: argparse.Namespace) -> int:
    """Serve until stdin closes; 1 when the specs cannot be served."""
    try:
        return main(args.specs, args.handlers)
    except SpecError as exc:
        print(format_diagnostics(exc.diagnostics, "text"), file=sys.stderr)
        print(f"host stdio: not serving: {exc.message}", file=sys.stderr)
        return 1
