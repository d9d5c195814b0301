"""Arguments several commands share, so they read and default the same way everywhere."""

from __future__ import annotations

import argparse
import os
from pathlib import Path
from typing import Any, Protocol

from host.spec.paths import default_handlers_dir

__all__ = ["Arguments", "add_handlers", "add_specs", "handlers_dir", "specs_dir"]


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
