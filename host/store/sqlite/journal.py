"""The records of first-round acts about to start, appended to a file of each process's own.

A first round's act has no claim, but the record it keeps if its worker dies (see
:mod:`host.observers.audit`) must be durable before it starts. A transaction in the database per
act cost a plain call about 100 µs of CPU; an append to a file costs a few. Each process appends to
files of its own beside the database (``store.db-acts-<pid>-<random>.log``, 0600 in its private
folder), each held under an exclusive ``flock`` for as long as the process lives, so a free lock
means a dead writer. An append survives its process (as a
``synchronous = NORMAL`` commit does), not a power loss.

Whoever finds a file whose lock is free writes its records into the audit table at the lowest rank
(:data:`host.store.records.STARTED`) and deletes it: every process looks once a second, and when it
opens the store. A record whose call ended has been replaced by the call's own record, and a replay
leaves that alone (a lower rank never replaces a higher one); one that was written already changes
nothing. A process starts a new file past :data:`ROTATE_BYTES` and deletes its old ones once every
record in them is past its time by :data:`KEEP_PAST_S` (the call's own record is in by then).

NOTE: a file is made under a name the sweep ignores, locked, and only then renamed into view, so
no sweep ever takes a live process's file for a dead one's.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import logging
import os
import time
from collections.abc import Callable
from pathlib import Path

from host import ids
from host.errors import StoreError
from host.store.records import AuditRecord
from host.store.threads import ProcessThread

__all__ = ["KEEP_PAST_S", "REPLAY_CHUNK", "ROTATE_BYTES", "Journal"]

log = logging.getLogger("host.store")

#: A process starts a new file once its current one is this long (about 2,000 records).
ROTATE_BYTES = 1 << 20
#: Records written into the store per transaction when a dead process's file is replayed, so a
#: long file never holds the write lock for long (other workers' audit writes wait a second).
REPLAY_CHUNK = 500
#: How long after the latest record's time an old file of a live process is kept.
KEEP_PAST_S = 120.0

Started = tuple[AuditRecord, float]
Replay = Callable[[list[Started]], None]


class Journal(ProcessThread):
    """This process's files of records, and the sweep that replays dead processes' files.

    Args:
        prefix: What every process's file names start with (the database's path and ``-acts``).
        replay: Writes records found in a dead process's file into the store (raises StoreError).
        every_s: How often the sweep looks.
    """

    def __init__(self, prefix: Path, replay: Replay, every_s: float = 1.0) -> None:
        self._folder = prefix.parent
        self._prefix = prefix.name
        self._replay = replay
        self._every_s = every_s
        self._fds: list[int] = []
        super().__init__("host-store-journal")

    def _reset(self) -> None:
        # NOTE: in a forked child, the parent's files are the parent's: closing the inherited
        # descriptors here leaves the parent's locks held by the parent.
        for fd in self._fds:
            with contextlib.suppress(OSError):
                os.close(fd)
        self._fds = []
        self._current: tuple[Path, int] | None = None
        self._size = 0
        self._latest = 0.0
        self._retired: list[tuple[Path, int, float]] = []

    def append(self, record: AuditRecord, keep_s: float) -> None:
        """Keep ``record`` (and its retention) in this process's file before its act starts.

        Raises:
            StoreError: The file cannot be written (the act's record is then not durable).
        """
        line = (
            json.dumps(
                [record.id, record.time, record.principal, record.tool, record.body(), keep_s]
            ).encode("ascii")
            + b"\n"
        )
        with self._lock:
            try:
                if self._current is None or self._size >= ROTATE_BYTES:
                    self._open()
                assert self._current is not None
                written = os.write(self._current[1], line)
            except OSError as exc:
                raise StoreError(f"cannot keep an act's record in {self._folder}: {exc}") from exc
            if written != len(line):
                raise StoreError(f"cannot keep an act's record in {self._folder}: a short write")
            self._size += written
            self._latest = max(self._latest, record.time)
            self._start()

    def _open(self) -> None:
        """Start a new file (with the lock held); the current one is kept until it is done."""
        name = f"{self._prefix}-{os.getpid()}-{ids.random_bytes(6).hex()}"
        hidden = self._folder / f"{name}.new"
        fd = os.open(
            hidden, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_APPEND | os.O_CLOEXEC, 0o600
        )
        self._fds.append(fd)
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        path = hidden.rename(self._folder / f"{name}.log")
        if self._current is not None:
            self._retired.append((*self._current, self._latest + KEEP_PAST_S))
        self._current, self._size, self._latest = (path, fd), 0, 0.0

    def watch(self) -> None:
        """Start the sweep in this process (it also starts with the first append)."""
        with self._lock:
            self._start()

    def _run(self) -> None:
        while not self._stop.wait(self._every_s):
            self.sweep()

    def sweep(self) -> int:
        """Replay and delete the files of dead processes, and this one's old files; how many
        records were replayed. A file whose records cannot be written stays for the next sweep."""
        with self._lock:
            mine = {path for path, _, _ in self._retired}
            if self._current is not None:
                mine.add(self._current[0])
            self._drop_done(time.time())
        try:
            found = sorted(self._folder.glob(f"{self._prefix}-*.log"))
        except OSError:
            return 0
        return sum(self._take(path) for path in found if path not in mine)

    def _drop_done(self, now: float) -> None:
        for path, fd, _ in [r for r in self._retired if r[2] < now]:
            with contextlib.suppress(OSError):
                path.unlink()
            with contextlib.suppress(OSError):
                os.close(fd)
            self._fds.remove(fd)
        self._retired = [r for r in self._retired if r[2] >= now]

    def _take(self, path: Path) -> int:
        """Replay ``path`` if its process is dead (its lock is free), then delete it."""
        try:
            fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
        except OSError:
            return 0  # taken by another sweep meanwhile
        try:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except OSError:
                return 0  # its process is alive
            records = _read(fd)
            try:
                for start in range(0, len(records), REPLAY_CHUNK):
                    self._replay(records[start : start + REPLAY_CHUNK])
            except StoreError as exc:
                # NOTE: the chunks written stay written; a replay of them again changes nothing.
                log.warning("a dead worker's act records could not be written yet: %s", exc)
                return 0
            with contextlib.suppress(FileNotFoundError):
                path.unlink()
            return len(records)
        finally:
            os.close(fd)

    def close(self) -> None:
        """Stop the sweep and let go of this process's files, for the next sweep to take.

        Files whose every record is past its time by :data:`KEEP_PAST_S` are deleted first: their
        calls have ended and been recorded, and a replay of them would only cost the next sweep.
        """
        self.stop()
        with self._lock:
            if self._current is not None:
                self._retired.append((*self._current, self._latest + KEEP_PAST_S))
                self._current = None
            self._drop_done(time.time())
            for fd in self._fds:
                with contextlib.suppress(OSError):
                    os.close(fd)
            self._fds, self._current, self._retired = [], None, []


def _read(fd: int) -> list[Started]:
    """The records in a file; a line its process did not finish writing is skipped."""
    chunks = []
    while chunk := os.read(fd, 1 << 20):
        chunks.append(chunk)
    records: list[Started] = []
    for line in b"".join(chunks).splitlines():
        try:
            call, at, principal, tool, body, keep_s = json.loads(line)
            records.append((AuditRecord.from_body(call, at, principal, tool, body), keep_s))
        except (ValueError, TypeError, KeyError):
            continue
    return records
