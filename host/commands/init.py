"""``host init [DIR]``: a starter spec directory that ``host validate`` and ``host test`` accept.

Writes a server, one tool with a confirm and its examples, its handler, a pytest file and the
``pytest.ini`` that lets ``pytest DIR`` pass from any directory, and the spec language's JSON
Schema for editors (each YAML file points at it). Refuses to overwrite anything.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from host.commands.path_hint import path_hint
from host.commands.starter import FILES
from host.spec.schema import render

__all__ = ["configure", "run"]

SCHEMA_FILE = "spec.schema.json"


def configure(parser: argparse.ArgumentParser) -> None:
    """Add ``host init``'s arguments to its subparser."""
    parser.add_argument(
        "directory", nargs="?", default=".", type=Path, metavar="DIR", help="where (default: .)"
    )


def run(args: argparse.Namespace) -> int:
    """Write the starter files; 1 (writing nothing) when any of them exists already."""
    root: Path = args.directory
    files = {**FILES, SCHEMA_FILE: render()}
    existing = [name for name in files if (root / name).exists()]
    if existing:
        listed = ", ".join(str(root / name) for name in existing)
        print(f"host init: {listed} already exists; choose another directory", file=sys.stderr)
        return 1
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    specs = root / "specs"
    print(f"created {', '.join(str(root / name) for name in files)}")
    print("next:")
    print(f"  host validate {specs}")
    print(f"  host test {specs}")
    print(f"  pytest {root}                  # its tests and examples, from any directory")
    print(f"  host plan add_note --specs {specs} --arg text='Call the plumber'")
    print(f"  host call add_note --specs {specs} --arg text='Call the plumber'")
    print(f"  host serve --specs {specs}")
    hint = path_hint()
    if hint is not None:
        print(hint)
    return 0
