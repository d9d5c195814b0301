"""Whether ``host`` works bare in this shell, and what to do when it does not.

Installed into a virtual environment that is not activated, the command is ``.venv/bin/host``,
and a bare ``host ...`` is "command not found": the first commands a new user runs say so once.
"""

from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path

__all__ = ["path_hint"]


def path_hint() -> str | None:
    """A line saying how to get ``host`` on the PATH, or None when it is there already."""
    bindir = Path(sys.executable).parent
    installed = bindir / "host"
    if not installed.exists():
        return None
    found = shutil.which("host")
    if found is not None and Path(found).resolve() == installed.resolve():
        return None
    shown = _short(bindir)
    activate = bindir / "activate"
    how = (
        f"activate its environment (. {_short(activate)}) so that host works bare, or"
        if activate.exists()
        else f"add {shown} to PATH, or"
    )
    return f"note: host is not on your PATH here: {how} keep writing {_short(installed)}"


def _short(path: Path) -> str:
    """``path`` relative to the working directory when that is shorter to type."""
    try:
        relative = os.path.relpath(path)
    except ValueError:  # NOTE: another drive, on Windows
        return str(path)
    return relative if len(relative) < len(str(path)) else str(path)
