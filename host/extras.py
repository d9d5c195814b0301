"""The optional extras, and install lines for them that work as written on any machine.

The distribution is named ``declarative-mcp-host``; the import package and the command stay
``host``. A line naming ``host[...]`` would ask the package index for a distribution called
``host``: a common word, taken or takeable by an unrelated project. Installing an extra's own
requirements into the host's environment works wherever the host came from (a clone, a wheel).
"""

from __future__ import annotations

import re
from functools import cache
from importlib import metadata

__all__ = ["DISTRIBUTION", "install_line", "requirements"]

DISTRIBUTION = "declarative-mcp-host"
"""The distribution's name on an index and in a wheel's file name (``declarative_mcp_host-...``)."""

_EXTRA = re.compile(
    r"""^(?P<requirement>[^;]+?)\s*;\s*extra\s*==\s*["'](?P<extra>[\w.-]+)["']\s*$"""
)


@cache
def requirements(extra: str) -> tuple[str, ...]:
    """What ``extra`` installs, as the installed distribution's metadata says.

    NOTE: read from the metadata pyproject.toml became, never copied here: a copy drifted the
    day an extra gained a package. Empty when the host runs from sources it was not installed from.
    """
    try:
        listed = metadata.requires(DISTRIBUTION) or []
    except metadata.PackageNotFoundError:
        return ()
    found = (_EXTRA.match(line) for line in listed)
    return tuple(m["requirement"] for m in found if m is not None and m["extra"] == extra)


def install_line(extra: str) -> str:
    """A line that installs ``extra`` into the running environment, as a user may paste it."""
    clone = f"pip install -e '.[{extra}]'"
    wanted = " ".join(f"'{r}'" for r in requirements(extra))
    if not wanted:
        return f"{clone} (the {extra} extra, in a clone of the host)"
    return f"pip install {wanted} (the {extra} extra; in a clone of the host: {clone})"
