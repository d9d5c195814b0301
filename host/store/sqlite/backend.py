"""The SQLite backend: the store in one file, for every worker process of one machine.

WAL mode lets readers go on while one writer commits; every claim is made in a ``BEGIN IMMEDIATE``
transaction, so two processes cannot both see a key free and both take it. Act claims and their
results are committed with ``synchronous = FULL`` (they survive a power loss), those written at the
same moment by a worker's threads together (:mod:`host.store.sqlite.durable`); other records with
``NORMAL`` (they survive a crash of the process). Connections, file modes and the check that the
file is still the one opened live in :mod:`host.store.sqlite.pool`; each role in a module of its
own (acts and locks, records, queues, approvals, audit, approval requests, places, the pages'
sessions).
"""

from __future__ import annotations

import os
import time
from pathlib import Path

from host.errors import StoreError
from host.store.sqlite import (
    acts,
    approvals,
    audit,
    places,
    queues,
    records,
    requests,
    sessions,
)
from host.store.sqlite.durable import DurableWrites
from host.store.sqlite.pool import Connections
from host.store.sqlite.sweep import Sweeping
from host.store.values import Risk

__all__ = ["SqliteBackend"]

#: How long a health probe waits for the write lock before calling the store unwritable.
HEALTH_WAIT_S = 0.5

_SCHEMA = """
CREATE TABLE IF NOT EXISTS store_health (
    id INTEGER PRIMARY KEY CHECK (id = 1),
    at REAL NOT NULL,        -- when a health probe last wrote
    pid INTEGER NOT NULL
);
"""


class SqliteBackend:
    """A store's records in one SQLite file shared by all processes.

    Args:
        path: The database file; its folder is created (0700) if missing, the file 0600.
        busy_timeout_s: How long one statement waits for another process's write lock.
        sweep_every_s: How often (at most) a write also deletes expired rows.
        watch_every_s: How often the watcher looks for pushed values while someone waits.

    Raises:
        host.errors.StoreError: The file cannot be opened or is not a usable database.
    """

    def __init__(
        self,
        path: str | Path,
        *,
        busy_timeout_s: float = 10.0,
        sweep_every_s: float = 30.0,
        watch_every_s: float = 0.02,
    ) -> None:
        self.path = Path(path)
        self.pool = Connections(self.path, busy_timeout_s)
        schema = (
            records.SCHEMA,
            queues.SCHEMA,
            acts.SCHEMA,
            approvals.SCHEMA,
            audit.SCHEMA,
            requests.SCHEMA,
            places.SCHEMA,
            sessions.SCHEMA,
        )
        with self.pool.connection() as conn:
            # executescript() runs the text as is, so this is one transaction of its own.
            conn.executescript("BEGIN IMMEDIATE;" + _SCHEMA + "".join(schema) + "COMMIT;")
        writes = Sweeping(self.pool, sweep_every_s)
        self.audit = audit.SqliteAudit(self.pool, writes)
        self.acts = acts.SqliteActs(self.pool, DurableWrites(self.pool), self.audit.chain)
        self.records = records.SqliteRecords(self.pool, writes)
        self.queues = queues.SqliteQueues(self.pool, writes, watch_every_s)
        self.approvals = approvals.SqliteApprovals(self.pool, writes)
        self.requests = requests.SqliteRequests(self.pool, writes)
        self.places = places.SqlitePlaces(self.pool, writes)
        self.sessions = sessions.SqliteSessions(self.pool, writes)

    def __repr__(self) -> str:
        return f"SqliteBackend({str(self.path)!r})"

    @property
    def file(self) -> Path:
        """The database file."""
        return self.path

    def health(self) -> str | None:
        """None if the file is the one opened and takes a write; else one line why not."""
        problem = self.pool.problem()
        if problem is not None:
            return problem
        # NOTE: an open file stays writable after a chmod (and SQLite reuses this process's open
        # descriptors for new connections), so the probe write alone would say "fine" while every
        # worker that starts afterwards fails: ask the file system about the paths too.
        effective = os.access in os.supports_effective_ids
        for path in (self.path.parent, self.path, *self.pool.companions()):
            if not os.access(path, os.W_OK, effective_ids=effective):
                return f"the SQLite store cannot be written: {path} is not writable"
        try:
            # NOTE: a readiness probe must answer within its own timeout (about a second):
            # a write lock held longer than that is itself the answer.
            with self.pool.write(wait_s=HEALTH_WAIT_S, queued=False) as conn:
                conn.execute(
                    "INSERT OR REPLACE INTO store_health (id, at, pid) VALUES (1, ?, ?)",
                    (time.time(), os.getpid()),
                )
        except StoreError as exc:
            return exc.message
        return None

    def durability(self) -> list[Risk]:
        """A replaced or deleted file is the one way this store loses records it knows of."""
        problem = self.pool.problem()
        return [] if problem is None else [Risk(problem, refuse=True)]

    def close(self) -> None:
        """Stop the watcher and close this process's idle connections."""
        self.queues.watcher.stop()
        self.audit.close()
        self.pool.close()
