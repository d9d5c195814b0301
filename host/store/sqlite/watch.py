"""The SQLite store's watcher: one query per tick for everything pushed, while anyone waits.

Queue rows get increasing ids (``AUTOINCREMENT``, and SQLite commits one writer at a time), so
"what was pushed since I last looked" is the rows above the last id seen. The watcher asks that
once per tick for all of the process's waiters together, and only while there are some; an idle
process runs no query at all.
"""

from __future__ import annotations

import logging
import time

from host.errors import StoreError
from host.store.sqlite.pool import Connections
from host.store.waiting import Watcher

__all__ = ["SqliteWatcher"]

log = logging.getLogger("host.store")


class SqliteWatcher(Watcher):
    """Wakes this process's waiters on the SQLite store's queues.

    Args:
        pool: The store's connections.
        every_s: How long between two looks: the most a handover waits for the watcher.
    """

    def __init__(self, pool: Connections, every_s: float) -> None:
        self._pool = pool
        self.every_s = every_s
        super().__init__("host-store-waiters")

    def _reset(self) -> None:
        super()._reset()
        self._seen: int | None = None  # the last queue id looked at, while anyone waits

    def _first_waiter(self) -> None:
        # NOTE: the first waiter's own look comes after this, so a value pushed before this
        # baseline is found by that look, and one pushed after is above it for the watcher.
        with self._pool.connection() as conn:
            self._seen = int(
                conn.execute("SELECT coalesce(max(id), 0) FROM store_queue").fetchone()[0]
            )

    def _run(self) -> None:
        failing = False
        while True:
            with self._lock:
                if self._idle():
                    return
                since = self._seen
            began = time.monotonic()
            try:
                with self._pool.connection() as conn:
                    rows = conn.execute(
                        "SELECT id, key FROM store_queue WHERE id > ? ORDER BY id",
                        (since or 0,),
                    ).fetchall()
            except StoreError as exc:
                if not failing:
                    log.warning("cannot watch the SQLite store's queues: %s", exc)
                failing = True
                rows = []
            else:
                failing = False
            if rows:
                with self._lock:
                    if self._seen is not None:
                        self._seen = max(self._seen, int(rows[-1][0]))
                self.wake({str(key) for _, key in rows})
            self._stop.wait(max(0.0, self.every_s - (time.monotonic() - began)))
