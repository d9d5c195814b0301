"""Checkpoints of the SQLite store's write-ahead log, run off the request path.

In WAL mode every commit appends to the ``-wal`` file, and now and then its pages are copied back
into the database file (a checkpoint, with an fsync of that file). SQLite runs one inside whichever
commit finds the log past ``wal_autocheckpoint`` pages, so one caller in a few hundred waits for
it: in-process, 1% of an act's record writes took 37% of their time, up to 17 ms each. Here each
process checkpoints from a thread of its own instead, a moment after its writes (``PASSIVE``: it
copies what no reader still needs and never blocks a writer), and the commits' own checkpoints are
left as a backstop only, for a log that grows past :data:`BACKSTOP_PAGES` pages anyway.

NOTE: nothing about durability changes: a commit is on disk (``FULL``) or in the log (``NORMAL``)
when it returns, as before; a checkpoint only moves committed pages from one file to the other.
"""

from __future__ import annotations

import logging
import sqlite3
from collections.abc import Callable
from contextlib import AbstractContextManager

from host.errors import StoreError
from host.store.threads import ProcessThread

__all__ = ["BACKSTOP_PAGES", "Checkpoints"]

log = logging.getLogger("host.store")

#: The ``wal_autocheckpoint`` of the store's connections: a commit checkpoints only a log this
#: long (about 40 MB of 4 KiB pages), which the thread keeps it far from.
BACKSTOP_PAGES = 10_000

Connect = Callable[[], AbstractContextManager[sqlite3.Connection]]


class Checkpoints(ProcessThread):
    """One thread per store and process that checkpoints the log soon after writes.

    Args:
        connect: A connection from the store's pool.
        every_s: How long after a write the log is checkpointed, at most once per this time.
    """

    def __init__(self, connect: Connect, every_s: float = 0.25) -> None:
        self._connect = connect
        self._every_s = every_s
        super().__init__("host-store-checkpoints")

    def _reset(self) -> None:
        self._written = False

    def wrote(self) -> None:
        """Note a commit: the log is checkpointed within ``every_s``."""
        # NOTE: a plain flag, read and set without the lock: a write that races the thread's
        # reset is checkpointed one period later, which is all the flag promises.
        if self._written and self._thread is not None:
            return
        self._written = True
        if self._thread is None:
            with self._lock:
                self._start()

    def _run(self) -> None:
        while not self._stop.wait(self._every_s):
            if not self._written:
                continue
            self._written = False
            try:
                with self._connect() as conn:
                    conn.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchall()
            except (StoreError, sqlite3.Error) as exc:
                # NOTE: the next write's commit checkpoints past the backstop all the same.
                log.debug("a checkpoint of the store's log failed: %s", exc)
