"""Where a spec directory's handlers live by default: the one rule every command follows."""

from __future__ import annotations

from pathlib import Path

__all__ = ["default_handlers_dir"]


def default_handlers_dir(specs: Path) -> Path:
    """``handlers/`` beside the specs directory (beside the file's directory for a spec file).

    ``specs`` itself is ``.``: then ``../handlers``, the folder beside the current one, as for
    any other spec directory.
    """
    directory = specs if specs.is_dir() or not specs.suffix else specs.parent
    if directory.name in ("", ".", ".."):
        return directory / ".." / "handlers"
    return directory.parent / "handlers"
