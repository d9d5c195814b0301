"""Arguments several commands share, so they read and default the same way everywhere."""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from host.errors import HostError
from host.spec.model import Project
from host.spec.paths import default_handlers_dir

if TYPE_CHECKING:
    from host.store import Store

__all__ = [
    "Arguments",
    "add_handlers",
    "add_specs",
    "add_store",
    "add_tool_arguments",
    "checked_project",
    "handlers_dir",
    "open_store_of",
    "specs_dir",
    "tool_arguments",
]


class Arguments(Protocol):
    """A parser or an argument group: anything arguments can be added to."""

    def add_argument(self, *names: str, **options: Any) -> argparse.Action: ...


def add_specs(parser: Arguments, what: str = "the spec directory") -> None:
    """``--specs DIR`` (default: ``$HOST_SPECS`` or ``specs``)."""
    parser.add_argument(
        "--specs", type=Path, metavar="DIR", help=f"{what} (default: $HOST_SPECS or specs)"
    )


def add_handlers(parser: Arguments) -> None:
    """``--handlers DIR`` (default: ``$HOST_HANDLERS`` or ``handlers`` beside the specs)."""
    parser.add_argument(
        "--handlers",
        type=Path,
        metavar="DIR",
        help="the handlers directory (default: $HOST_HANDLERS or `handlers` beside the specs)",
    )


def specs_dir(given: Path | None) -> Path:
    """The spec directory: the one given, else ``$HOST_SPECS``, else ``specs``."""
    return given or Path(os.environ.get("HOST_SPECS") or "specs")


def handlers_dir(given: Path | None, specs: Path) -> Path:
    """The handlers directory: the one given, else ``$HOST_HANDLERS``, else beside ``specs``."""
    if given is not None:
        return given
    from_env = os.environ.get("HOST_HANDLERS")
    return Path(from_env) if from_env else default_handlers_dir(specs)


def checked_project(args: argparse.Namespace, command: str) -> Project | None:
    """The project ``--specs`` and ``--handlers`` name, checked; None once its errors are printed.

    The errors are printed as ``host validate`` prints them, then one line naming ``command``.
    """
    from host.spec.check import check_project
    from host.spec.report import format_diagnostics

    specs = specs_dir(args.specs)
    result = check_project([specs], handlers_dir(args.handlers, specs))
    if result.project is None:
        sys.stderr.write(format_diagnostics(result.diagnostics))
        print(f"host {command}: {len(result.errors)} errors in the specs", file=sys.stderr)
    return result.project


def add_tool_arguments(parser: Arguments) -> None:
    """``--arg NAME=VALUE`` (repeatable) and ``--args JSON`` (alias ``--json``)."""
    parser.add_argument(
        "--arg",
        action="append",
        default=[],
        metavar="NAME=VALUE",
        help="an argument (repeatable); VALUE is read as JSON when the schema wants a non-string",
    )
    parser.add_argument(
        "--args", "--json", dest="json", metavar="OBJECT", help="all arguments as one JSON object"
    )


def tool_arguments(args: argparse.Namespace, schema: Mapping[str, Any]) -> dict[str, Any]:
    """The tool's arguments from ``--args`` and ``--arg``, typed by the input ``schema``.

    Raises:
        HostError: ``--args`` is not a JSON object, or an ``--arg`` is not ``NAME=VALUE``.
    """
    arguments: dict[str, Any] = {}
    if args.json:
        try:
            loaded = json.loads(args.json)
        except ValueError as exc:
            raise HostError(f"--args is not valid JSON: {exc}") from None
        if not isinstance(loaded, dict):
            raise HostError("--args must be a JSON object")
        arguments.update(loaded)
    properties = schema.get("properties", {})
    for item in args.arg:
        name, sep, text = item.partition("=")
        if not sep or not name:
            raise HostError(f"--arg must look like NAME=VALUE, got {item!r}")
        if properties.get(name, {}).get("type") == "string":
            arguments[name] = text
            continue
        try:
            arguments[name] = json.loads(text)
        except ValueError:
            arguments[name] = text
    return arguments


def add_store(parser: Arguments) -> None:
    """``--data-dir DIR`` and ``--store URL``: the store a served host keeps its records in."""
    parser.add_argument(
        "--data-dir",
        type=Path,
        metavar="DIR",
        help="the host's data directory (default: $HOST_DATA_DIR or .host)",
    )
    parser.add_argument(
        "--store",
        metavar="URL",
        help="sqlite:///path or redis://host:port/db (default: $HOST_STORE or the SQLite file "
        "in the data directory)",
    )


def open_store_of(args: argparse.Namespace, *, say: bool = False) -> Store:
    """The store ``--store``/``--data-dir`` (else ``HOST_STORE``/``HOST_DATA_DIR``) name, found
    as ``host serve`` finds it (:func:`host.store.where.locate_store`).

    With ``say``, one line on stderr names the store read, and the one the data directory's
    host serves when that is another.

    Raises:
        HostError: The store cannot be opened, or it is an SQLite file that does not exist
            (a wrong data directory is told, not created).
    """
    from host.store import open_store
    from host.store.where import locate_store, served_elsewhere

    location = locate_store(args.store, args.data_dir, os.environ)
    elsewhere = served_elsewhere(location)
    hint = (
        f"; the host of {location.data_dir} serves {elsewhere}: give --store (or HOST_STORE)"
        if elsewhere
        else ""
    )
    url = location.url
    if url.lower().startswith("sqlite:///"):
        path = Path(url[len("sqlite:///") :])
        if not path.exists():
            raise HostError(
                f"there is no store at {path}: point --data-dir (or $HOST_DATA_DIR) at the "
                f"host's data directory, or --store (or $HOST_STORE) at its store{hint}"
            )
    if say:
        print(f"host: reading the store {location.shown}{hint}", file=sys.stderr)
    return open_store(url)
