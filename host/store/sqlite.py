"""The shared store in one SQLite file, for every worker process of one machine.

WAL mode lets readers go on while one writer commits; every claim is made in a ``BEGIN IMMEDIATE``
transaction, so two processes cannot both see a key free and both take it. Connections come from a
small pool (one per concurrent caller, reused across threads), and a forked child opens its own,
since an SQLite connection must not cross a ``fork``. Waiting (for another worker's act, or for a
relayed value) polls with short sleeps: a read first, and the write lock only when there is
something to take.
"""

from __future__ import annotations

import logging
import os
import queue
import sqlite3
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

from host.errors import StoreError
from host.store.base import Claim, backoff, check_ttl, run_once

__all__ = ["SqliteStore"]

log = logging.getLogger("host.store")

_SCHEMA = """
CREATE TABLE IF NOT EXISTS store_records (
    key TEXT PRIMARY KEY,
    value TEXT,            -- NULL while the act that claimed the key runs
    owner TEXT,            -- the claim's token while it runs, then NULL
    expires REAL NOT NULL  -- Unix time
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS store_records_expires ON store_records (expires);
CREATE TABLE IF NOT EXISTS store_queue (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    key TEXT NOT NULL,
    value TEXT NOT NULL,
    expires REAL NOT NULL
);
CREATE INDEX IF NOT EXISTS store_queue_key ON store_queue (key, id);
CREATE INDEX IF NOT EXISTS store_queue_expires ON store_queue (expires);
"""


class SqliteStore:
    """A :class:`host.store.base.Store` in one SQLite file shared by all processes.

    Args:
        path: The database file; its folder is created if missing.
        busy_timeout_s: How long one statement waits for another process's write lock.
        sweep_every_s: How often (at most) a write also deletes expired rows.

    Raises:
        host.errors.StoreError: The file cannot be opened or is not a usable database.
    """

    def __init__(
        self, path: str | Path, *, busy_timeout_s: float = 10.0, sweep_every_s: float = 30.0
    ) -> None:
        self.path = Path(path)
        self._busy_timeout_s = busy_timeout_s
        self._sweep_every_s = sweep_every_s
        self._next_sweep = 0.0
        self._lock = threading.Lock()
        self._closed = False
        self._pid = os.getpid()
        self._idle: queue.SimpleQueue[sqlite3.Connection] = queue.SimpleQueue()
        # NOTE: connections inherited over fork are kept referenced, never closed in the child:
        # SQLite forbids using them there, and closing one could disturb the parent's locks.
        self._inherited: list[queue.SimpleQueue[sqlite3.Connection]] = []
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise StoreError(
                f"cannot create the folder for the SQLite store {self.path}: {exc}"
            ) from exc
        with self._connection() as conn:
            # executescript() runs the text as is, so this is one transaction of its own.
            conn.executescript("BEGIN IMMEDIATE;" + _SCHEMA + "COMMIT;")

    def __repr__(self) -> str:
        return f"SqliteStore({str(self.path)!r})"

    # -- the Store interface -------------------------------------------------------------------

    def once(self, key: str, ttl_s: float, compute: Callable[[], str], wait_s: float = 30.0) -> str:
        """Run ``compute`` at most once for ``key``; see :meth:`host.store.base.Store.once`."""
        check_ttl(ttl_s)
        token = os.urandom(12).hex()
        return run_once(
            key,
            wait_s,
            claim=lambda: self._claim(key, token, ttl_s),
            compute=compute,
            release=lambda: self._release(key, token),
            record=lambda value: self._record(key, token, value, ttl_s),
        )

    def add(self, key: str, value: str, ttl_s: float) -> bool:
        """Insert if absent; see :meth:`host.store.base.Store.add`."""
        check_ttl(ttl_s)
        now = time.time()
        with self._write() as conn:
            cursor = conn.execute(
                "INSERT INTO store_records (key, value, owner, expires) VALUES (?, ?, NULL, ?)"
                " ON CONFLICT (key) DO UPDATE SET value = excluded.value, owner = NULL,"
                " expires = excluded.expires WHERE store_records.expires <= ?",
                (key, value, now + ttl_s, now),
            )
            return cursor.rowcount == 1

    def get(self, key: str) -> str | None:
        """The live value for ``key``; see :meth:`host.store.base.Store.get`."""
        with self._connection() as conn:
            row = conn.execute(
                "SELECT value FROM store_records WHERE key = ? AND expires > ?",
                (key, time.time()),
            ).fetchone()
        return None if row is None else row[0]

    def put(self, key: str, value: str, ttl_s: float) -> None:
        """Insert or overwrite; see :meth:`host.store.base.Store.put`."""
        check_ttl(ttl_s)
        with self._write() as conn:
            conn.execute(
                "INSERT OR REPLACE INTO store_records (key, value, owner, expires)"
                " VALUES (?, ?, NULL, ?)",
                (key, value, time.time() + ttl_s),
            )

    def delete(self, key: str) -> None:
        """Remove the record; see :meth:`host.store.base.Store.delete`."""
        with self._write() as conn:
            conn.execute("DELETE FROM store_records WHERE key = ?", (key,))

    def push(self, key: str, value: str, ttl_s: float) -> None:
        """Append to a queue; see :meth:`host.store.base.Store.push`."""
        check_ttl(ttl_s)
        expires = time.time() + ttl_s
        with self._write() as conn:
            conn.execute(
                "INSERT INTO store_queue (key, value, expires) VALUES (?, ?, ?)",
                (key, value, expires),
            )
            # Like a Redis key's expiry: the whole queue lives ttl_s after its last push.
            conn.execute("UPDATE store_queue SET expires = ? WHERE key = ?", (expires, key))

    def pop(self, key: str, timeout_s: float) -> str | None:
        """Take the oldest value, polling; see :meth:`host.store.base.Store.pop`."""
        deadline = time.monotonic() + timeout_s
        delays = backoff()
        while True:
            with self._connection() as conn:
                row = conn.execute(
                    "SELECT id, value FROM store_queue WHERE key = ? AND expires > ?"
                    " ORDER BY id LIMIT 1",
                    (key, time.time()),
                ).fetchone()
            if row is not None:
                with self._write() as conn:
                    taken = conn.execute("DELETE FROM store_queue WHERE id = ?", (row[0],))
                if taken.rowcount == 1:
                    return str(row[1])
                continue  # another worker took it first; look again at once
            left = deadline - time.monotonic()
            if left <= 0:
                return None
            time.sleep(min(next(delays), left))

    def health(self) -> str | None:
        """None if the file takes a write now; see :meth:`host.store.base.Store.health`.

        NOTE: a fresh connection, not a pooled one: an open file stays writable after its
        folder or mode changes, while every worker that starts afterwards would fail. A short
        busy timeout, so a writer holding the lock makes the probe fail instead of hang.
        """
        try:
            conn = sqlite3.connect(self.path, timeout=2.0, isolation_level=None)
            try:
                conn.execute("BEGIN IMMEDIATE")
                conn.execute(
                    "INSERT OR REPLACE INTO store_records (key, value, owner, expires)"
                    " VALUES ('host:health', ?, NULL, ?)",
                    (str(os.getpid()), time.time() + 60),
                )
                conn.execute("COMMIT")
            finally:
                conn.close()
        except sqlite3.Error as exc:
            return f"the SQLite store {self.path} cannot be written: {exc}"
        return None

    def close(self) -> None:
        """Close this process's idle connections; ones in use close when handed back."""
        self._closed = True
        if os.getpid() != self._pid:
            self._after_fork()  # close only what this process opened
        while True:
            try:
                self._idle.get_nowait().close()
            except queue.Empty:
                return

    # -- claims --------------------------------------------------------------------------------

    def _claim(self, key: str, token: str, ttl_s: float) -> Claim:
        """Take ``key`` if free; else report its value, or that another process holds it.

        NOTE: one upsert, atomic on its own (autocommit), takes a free or expired key; only when
        it is taken does a second statement read what is there. The common case, an act nobody
        else is running, costs one statement instead of a read and a write transaction.
        """
        with self._connection() as conn:
            now = time.time()
            taken = conn.execute(
                "INSERT INTO store_records (key, value, owner, expires) VALUES (?, NULL, ?, ?)"
                " ON CONFLICT (key) DO UPDATE SET value = NULL, owner = excluded.owner,"
                " expires = excluded.expires WHERE store_records.expires <= ?",
                (key, token, now + ttl_s, now),
            ).rowcount
            if taken == 1:
                return True, None
            row = conn.execute(
                "SELECT value FROM store_records WHERE key = ? AND expires > ?", (key, now)
            ).fetchone()
        # No row: it expired between the two statements; the next attempt takes it.
        return False, None if row is None else row[0]

    def _release(self, key: str, token: str) -> None:
        try:
            with self._write() as conn:
                conn.execute("DELETE FROM store_records WHERE key = ? AND owner = ?", (key, token))
        except StoreError as exc:
            # The act's own exception matters more; the claim then lapses with its ttl.
            log.warning("could not release the claim on %r: %s", key, exc)

    def _record(self, key: str, token: str, value: str, ttl_s: float) -> None:
        with self._connection() as conn:
            kept = conn.execute(
                "UPDATE store_records SET value = ?, owner = NULL, expires = ?"
                " WHERE key = ? AND owner = ?",
                (value, time.time() + ttl_s, key, token),
            ).rowcount
            self._maybe_sweep(conn)
            if kept == 1:
                return
            log.warning(
                "the claim on %r expired before its act finished; ttl_s=%g is too short",
                key,
                ttl_s,
            )
            conn.execute(
                "INSERT OR REPLACE INTO store_records (key, value, owner, expires)"
                " VALUES (?, ?, NULL, ?)",
                (key, value, time.time() + ttl_s),
            )

    # -- connections ---------------------------------------------------------------------------

    def _connect(self) -> sqlite3.Connection:
        conn = sqlite3.connect(
            self.path,
            timeout=self._busy_timeout_s,
            isolation_level=None,  # we issue BEGIN ourselves
            check_same_thread=False,  # pooled: used by one thread at a time, not always the same
        )
        try:
            self._set_wal(conn)
            conn.execute("PRAGMA synchronous = NORMAL")  # durable across crashes of the process
        except BaseException:
            conn.close()
            raise
        return conn

    def _set_wal(self, conn: sqlite3.Connection) -> None:
        # NOTE: switching a fresh file to WAL needs an exclusive lock, and several workers starting
        # together can see "database is locked" here despite the busy timeout; so retry a while.
        deadline = time.monotonic() + self._busy_timeout_s
        delays = backoff(0.01, 0.1)
        while True:
            try:
                mode = conn.execute("PRAGMA journal_mode = WAL").fetchone()[0]
                break
            except sqlite3.OperationalError as exc:
                if "locked" not in str(exc) or time.monotonic() >= deadline:
                    raise
                time.sleep(next(delays))
        if str(mode).lower() != "wal":
            raise sqlite3.OperationalError(f"journal_mode is {mode!r}, WAL could not be set")

    @contextmanager
    def _connection(self) -> Iterator[sqlite3.Connection]:
        """A connection for this thread to use alone; store errors come out as StoreError."""
        if self._closed:
            raise StoreError(f"the SQLite store {self.path} is closed")
        if os.getpid() != self._pid:
            self._after_fork()
        idle = self._idle
        try:
            try:
                conn = idle.get_nowait()
            except queue.Empty:
                conn = self._connect()
            try:
                yield conn
            finally:
                if conn.in_transaction:
                    conn.rollback()
                if self._closed or idle is not self._idle:
                    conn.close()
                else:
                    idle.put(conn)
        except sqlite3.Error as exc:
            raise StoreError(f"the SQLite store {self.path} failed: {exc}") from exc

    @contextmanager
    def _write(self) -> Iterator[sqlite3.Connection]:
        """A connection in a ``BEGIN IMMEDIATE`` transaction, committed if the block succeeds."""
        with self._connection() as conn:
            conn.execute("BEGIN IMMEDIATE")
            yield conn
            self._maybe_sweep(conn)
            conn.execute("COMMIT")

    def _after_fork(self) -> None:
        with self._lock:
            if os.getpid() != self._pid:
                self._inherited.append(self._idle)
                self._idle = queue.SimpleQueue()
                self._pid = os.getpid()

    def _maybe_sweep(self, conn: sqlite3.Connection) -> None:
        """Delete expired rows now and then (inside a write transaction, or on their own)."""
        if time.monotonic() < self._next_sweep:
            return
        self._next_sweep = time.monotonic() + self._sweep_every_s
        now = time.time()
        conn.execute("DELETE FROM store_records WHERE expires <= ?", (now,))
        conn.execute("DELETE FROM store_queue WHERE expires <= ?", (now,))
