"""Which store a host uses: the one rule ``host serve`` and every command that reads it follow.

``--store`` (else ``HOST_STORE``), else the SQLite file ``store.db`` in the data directory
(``--data-dir``, else ``HOST_DATA_DIR``, else ``.host``). A served host leaves a note of the store
it serves in its data directory (``serving``, the URL without its password), so a command that
ends up at the SQLite file of a data directory whose host serves another store can say so.
"""

from __future__ import annotations

import contextlib
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from host.store.redis.client import redact

__all__ = ["NOTE_FILE", "StoreLocation", "locate_store", "note_serving", "served_elsewhere"]

#: The file in the data directory that names the store a served host uses.
NOTE_FILE = "serving"


@dataclass(frozen=True)
class StoreLocation:
    """A store's URL, the data directory, and how the URL was chosen (for a person to read)."""

    url: str
    data_dir: Path
    chosen_by: str

    @property
    def shown(self) -> str:
        """The URL without its password, and how it was chosen."""
        return f"{redact(self.url)} ({self.chosen_by})"


def locate_store(
    store: str | None, data_dir: Path | None, environ: Mapping[str, str]
) -> StoreLocation:
    """The store ``--store`` and ``--data-dir`` (None: not given) and ``environ`` name."""
    folder = (data_dir or Path(environ.get("HOST_DATA_DIR") or ".host")).resolve()
    if store:
        return StoreLocation(store, folder, "--store")
    if environ.get("HOST_STORE"):
        return StoreLocation(environ["HOST_STORE"], folder, "HOST_STORE")
    return StoreLocation(f"sqlite:///{folder / 'store.db'}", folder, "the data directory's")


def note_serving(location: StoreLocation) -> None:
    """Leave the note of the store served from ``location``'s data directory (best effort)."""
    # NOTE: a hint for the commands, never a reason not to serve
    with contextlib.suppress(OSError):
        (location.data_dir / NOTE_FILE).write_text(redact(location.url) + "\n")


def served_elsewhere(location: StoreLocation) -> str | None:
    """The store the data directory's host last served, when it is not ``location``'s."""
    try:
        served = (location.data_dir / NOTE_FILE).read_text().strip()
    except OSError:
        return None
    return served if served and served != redact(location.url) else None
