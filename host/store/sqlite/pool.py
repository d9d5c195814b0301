"""Connections to the SQLite store's file: pooled, private, fork-safe, and pinned to one file.

Connections come from a small pool (one per concurrent caller, reused across threads), and a
forked child opens its own, since an SQLite connection must not cross a ``fork``. The file is
created 0600 (SQLite gives its ``-wal`` and ``-shm`` files the same mode) in a folder created 0700.

Writers of one process take turns on a lock before they ask SQLite for its write lock. NOTE:
SQLite's busy handler polls with sleeps and serves nobody in order, so hundreds of threads of one
worker writing at once (a burst of answers to open questions) would starve some of them past the
busy timeout; on the lock they queue, and SQLite only arbitrates between processes.

The pool remembers which file (device and inode) it opened. If the path is deleted or replaced
while the host runs, workers that start afterwards would open another file than the running ones
and could act again on calls the old file records as done; so from then on every write is refused
with a :class:`host.errors.StoreError` that says why (until the host is restarted), and new
connections are never opened on the other file.
"""

from __future__ import annotations

import os
import queue
import sqlite3
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from urllib.parse import quote

from host.errors import StoreError
from host.store.files import FileIdentity, private_dir, private_file
from host.store.waiting import backoff

__all__ = ["Connections"]


class Connections:
    """The pool of connections to one SQLite file.

    Args:
        path: The database file; it and its folder are created if missing.
        busy_timeout_s: How long one statement waits for another process's write lock.

    Raises:
        host.errors.StoreError: The folder or file cannot be created.
    """

    def __init__(self, path: Path, busy_timeout_s: float) -> None:
        self.path = path
        self.busy_timeout_s = busy_timeout_s
        self.closed = False
        self._lock = threading.Lock()
        self._pid = os.getpid()
        self._idle: queue.SimpleQueue[sqlite3.Connection] = queue.SimpleQueue()
        # NOTE: connections that commit with synchronous = FULL are pooled apart, so no
        # transaction pays two pragmas to switch a connection's level and back.
        self._durable: queue.SimpleQueue[sqlite3.Connection] = queue.SimpleQueue()
        # NOTE: and so are those of writes that wait for SQLite's lock otherwise than the busy
        # timeout (the audit writer's: every batch paid two pragmas to set its wait and back).
        self._waiting: dict[tuple[bool, float], queue.SimpleQueue[sqlite3.Connection]] = {}
        # NOTE: connections inherited over fork are kept referenced, never closed in the child:
        # SQLite forbids using them there, and closing one could disturb the parent's locks.
        self._inherited: list[queue.SimpleQueue[sqlite3.Connection]] = []
        self._broken: str | None = None
        self._writer = threading.Lock()
        # NOTE: the ids of connections opened while the file could not be written.
        self._read_only: set[int] = set()
        try:
            if not path.parent.exists():
                private_dir(path.parent)
            private_file(path)
            for extra in self.companions():  # left by an older version, perhaps readable by all
                private_file(extra)
            self.identity = FileIdentity(path)
        except OSError as exc:
            raise StoreError(f"cannot create the SQLite store {path}: {exc}") from exc
        self._uri = f"file:{quote(str(path.resolve()))}?mode=rw"

    def companions(self) -> list[Path]:
        """The ``-wal`` and ``-shm`` files SQLite keeps beside the database, those that exist."""
        found = (Path(f"{self.path}{suffix}") for suffix in ("-wal", "-shm"))
        return [path for path in found if path.exists()]

    def problem(self) -> str | None:
        """Why this store refuses writes (its file was deleted or replaced), or None.

        Once a problem is seen it stays: the file at the path is not the one this process's
        records are in, whatever happens to the path afterwards.
        """
        if self._broken is None:
            found = self.identity.problem()
            if found is not None:
                self._broken = (
                    f"the SQLite store refuses writes: {found}; restart the host so that every "
                    "worker opens the same file (act records in the old file are lost)"
                )
        return self._broken

    def check(self) -> None:
        """Raise StoreError if the store's file was deleted or replaced."""
        found = self.problem()
        if found is not None:
            raise StoreError(found)

    def open(self, *, durable: bool = False, wait_s: float | None = None) -> sqlite3.Connection:
        """A new connection to the store's file (never creating one), in WAL mode.

        Args:
            durable: Its commits use ``synchronous = FULL`` (else ``NORMAL``).
            wait_s: Its busy timeout, if not ``busy_timeout_s``.
        """
        conn = sqlite3.connect(
            self._uri,
            uri=True,
            timeout=self.busy_timeout_s if wait_s is None else wait_s,
            isolation_level=None,  # we issue BEGIN ourselves
            check_same_thread=False,  # pooled: used by one thread at a time, not always the same
        )
        try:
            self._set_wal(conn)
            # NORMAL: durable across crashes of the process; FULL: of the machine too.
            conn.execute(f"PRAGMA synchronous = {'FULL' if durable else 'NORMAL'}")
        except BaseException:
            conn.close()
            raise
        if not _writable(self.path):
            # NOTE: SQLite opens a file it cannot write read-only, for good, and reads succeed
            # on it: pooled, it would refuse a write after the file takes writes again.
            self._read_only.add(id(conn))
        return conn

    def _set_wal(self, conn: sqlite3.Connection) -> None:
        # NOTE: switching a fresh file to WAL needs an exclusive lock, and several workers starting
        # together can see "database is locked" here despite the busy timeout; so retry a while.
        deadline = time.monotonic() + self.busy_timeout_s
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
    def connection(
        self, *, durable: bool = False, wait_s: float | None = None
    ) -> Iterator[sqlite3.Connection]:
        """A connection for this thread to use alone; store errors come out as StoreError.

        Args:
            durable: One whose commits use ``synchronous = FULL``.
            wait_s: One whose busy timeout is this, not ``busy_timeout_s``.
        """
        if self.closed:
            raise StoreError(f"the SQLite store {self.path} is closed")
        if os.getpid() != self._pid:
            self._after_fork()
        idle = self._idle_for(durable, wait_s)
        try:
            try:
                conn = idle.get_nowait()
            except queue.Empty:
                conn = self.open(durable=durable, wait_s=wait_s)
                if self.problem() is not None:
                    conn.close()
                    self.check()
            broken = False
            try:
                yield conn
            except sqlite3.Error as exc:
                broken = _spoilt(exc)
                raise
            finally:
                self._hand_back(conn, idle, broken)
        except sqlite3.Error as exc:
            raise StoreError(f"the SQLite store {self.path} failed: {exc}") from exc

    def _idle_for(
        self, durable: bool, wait_s: float | None
    ) -> queue.SimpleQueue[sqlite3.Connection]:
        """The idle connections of this kind."""
        if wait_s is None:
            return self._durable if durable else self._idle
        found = self._waiting.get((durable, wait_s))
        if found is None:
            with self._lock:
                found = self._waiting.setdefault((durable, wait_s), queue.SimpleQueue())
        return found

    def _pools(self) -> list[queue.SimpleQueue[sqlite3.Connection]]:
        return [self._idle, self._durable, *self._waiting.values()]

    def _hand_back(
        self, conn: sqlite3.Connection, idle: queue.SimpleQueue[sqlite3.Connection], broken: bool
    ) -> None:
        """Put ``conn`` back for the next caller, or close it when it must not be used again."""
        if broken or id(conn) in self._read_only:
            # NOTE: a connection SQLite opened while the file could not be written (read-only,
            # immutable, a full disk) stays read-only for good: the next caller opens a new one,
            # so the worker recovers as soon as the file takes writes again.
            self._read_only.discard(id(conn))
            conn.close()
            return
        if conn.in_transaction:
            conn.rollback()
        current = idle is self._idle or idle is self._durable or idle in self._waiting.values()
        if self.closed or not current:
            conn.close()
        else:
            idle.put(conn)

    @contextmanager
    def write(
        self, *, durable: bool = False, wait_s: float | None = None, queued: bool = True
    ) -> Iterator[sqlite3.Connection]:
        """A connection in a ``BEGIN IMMEDIATE`` transaction, committed if the block succeeds.

        Args:
            durable: Commit with ``synchronous = FULL``: the transaction survives a power loss,
                at the cost of an fsync of the write-ahead log.
            wait_s: Wait at most this long for another process's write lock (instead of
                ``busy_timeout_s``): a connection whose busy timeout it is, kept for the next
                such write.
            queued: Take this process's turn among its writers first. False for a probe of the
                file itself: it asks SQLite's lock directly, so a lock held elsewhere is reported
                as SQLite says it, not as a long queue of this process's writers waiting on it.

        Raises:
            host.errors.StoreError: The store's file was replaced, or SQLite failed.
        """
        self.check()
        if os.getpid() != self._pid:
            self._after_fork()
        if not queued:
            with self._transaction(durable, wait_s) as conn:
                yield conn
            return
        writer = self._writer
        patience = self.busy_timeout_s if wait_s is None else wait_s
        if not writer.acquire(timeout=patience):
            raise StoreError(
                f"the SQLite store {self.path} failed: no turn to write within "
                f"{patience:g}s: other writers of this process held it all that time"
            )
        try:
            with self._transaction(durable, wait_s) as conn:
                yield conn
        finally:
            writer.release()

    @contextmanager
    def _transaction(self, durable: bool, wait_s: float | None) -> Iterator[sqlite3.Connection]:
        # NOTE: a block that fails leaves its transaction open: it is rolled back when the
        # connection is handed back.
        with self.connection(durable=durable, wait_s=wait_s) as conn:
            conn.execute("BEGIN IMMEDIATE")
            yield conn
            conn.execute("COMMIT")

    def close(self) -> None:
        """Close this process's idle connections; ones in use close when handed back."""
        self.closed = True
        if os.getpid() != self._pid:
            self._after_fork()  # close only what this process opened
        for idle in self._pools():
            while True:
                try:
                    idle.get_nowait().close()
                except queue.Empty:
                    break

    def _after_fork(self) -> None:
        with self._lock:
            if os.getpid() != self._pid:
                self._inherited += self._pools()
                self._idle, self._durable = queue.SimpleQueue(), queue.SimpleQueue()
                self._waiting = {}
                # NOTE: a thread of the parent may have held it at the fork; it never returns.
                self._writer = threading.Lock()
                self._pid = os.getpid()


#: SQLite's primary result codes after which a connection is not trusted again: READONLY,
#: IOERR, CORRUPT, FULL, CANTOPEN.
_SPOILT = frozenset({8, 10, 11, 13, 14})


def _writable(path: Path) -> bool:
    """Whether this process may write ``path`` now (an immutable file is not writable)."""
    effective = os.access in os.supports_effective_ids
    return os.access(path, os.W_OK, effective_ids=effective)


def _spoilt(exc: sqlite3.Error) -> bool:
    """Whether ``exc`` leaves its connection unfit for the pool (it is closed instead)."""
    code = getattr(exc, "sqlite_errorcode", None)
    return isinstance(code, int) and code & 0xFF in _SPOILT
