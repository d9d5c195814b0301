"""The SQLite store's file as ``host serve``'s master found it, so no worker serves from another.

A running worker notices when the store's file is deleted or replaced (it refuses writes, and
``/readyz`` says why: :mod:`host.store.sqlite.pool`). A worker that starts afterwards (gunicorn
replacing one that died, or a reload) would instead create a new, empty file at the path and serve
from it, while its siblings still know the old one: a final round that already acted, retried on
the new worker, would act again. So the master notes which file the store was when it started,
and every worker checks it before it opens the store: if it is no longer that file, the worker
refuses to start, which stops the host (gunicorn stops when a worker fails to boot) with the
reason; restarting ``host serve`` then starts afresh with a new file (the old file's act records
are lost).
"""

from __future__ import annotations

from pathlib import Path

from host.store import open_store
from host.store.files import FileIdentity

__all__ = ["StoreFile"]


class StoreFile:
    """Which file the SQLite store was when the host started.

    Args:
        path: The store's database file; it must exist.
    """

    def __init__(self, path: Path) -> None:
        self.path = path
        self._identity = FileIdentity(path)

    @classmethod
    def pin(cls, url: str) -> StoreFile | None:
        """The store at ``url``'s file as it is now (opened, so created if missing); None for
        a store that is not a file (Redis).

        Raises:
            host.errors.StoreError: The store cannot be opened.
        """
        store = open_store(url)
        try:
            return None if store.file is None else cls(store.file)
        finally:
            store.close()

    def problem(self) -> str | None:
        """Why a worker starting now must not serve (the file changed since the start), or None."""
        found = self._identity.problem()
        if found is None:
            return None
        return (
            f"the SQLite store is not the file this host started with: {found}. A worker that "
            "opened a new file would not know the acts already done; restart host serve to "
            "start with a new store (the act records of the old file are lost)"
        )
