"""``host schema``: print the spec language's JSON Schema (draft-07), for editors and CI."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from host.spec.schema import render

__all__ = ["configure", "run"]


def configure(parser: argparse.ArgumentParser) -> None:
    """Add ``host schema``'s arguments to its subparser."""
    parser.description = (
        "Print the JSON Schema (draft-07) of spec documents. Editors with yaml-language-server use "
        "it through a first line `# yaml-language-server: $schema=PATH`."
    )
    parser.add_argument(
        "-o", "--output", type=Path, metavar="FILE", help="write it to FILE instead of stdout"
    )


def run(args: argparse.Namespace) -> int:
    """Print (or write) the schema; 0."""
    text = render()
    if args.output is None:
        sys.stdout.write(text)
    else:
        args.output.write_text(text, encoding="utf-8")
    return 0
