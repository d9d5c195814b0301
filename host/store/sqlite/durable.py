"""Durable writes of one process committed together: one fsync for every write waiting at once.

An act's claim must be on disk (``synchronous = FULL``) before the act starts, and its result
before the call returns; an fsync is the costliest thing a call does. The writers of a process
already take turns, so while one transaction waits on the disk, other threads' writes queue behind
it. Group commit turns that queue into the next transaction: the write that finds no transaction
under way leads, runs every write queued by then in one transaction (each its own statements, in
the order they came, each decided as if alone), commits once, and hands the lead to the first write
queued meanwhile. Nobody waits for a timer: alone, a write commits at once, as before.

If the transaction fails, every write in it fails with the same :class:`host.errors.StoreError`:
none was made (a statement that fails can leave SQLite's transaction rolled back, so the writes
before it in the batch are not kept either), and each caller reports the store unavailable, as a
lone write would.
"""

from __future__ import annotations

import os
import sqlite3
import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from host.blocking import blocking
from host.errors import StoreError
from host.store.sqlite.pool import Connections

__all__ = ["DurableWrites"]

T = TypeVar("T")


@dataclass(eq=False)
class _Write(Generic[T]):
    apply: Callable[[sqlite3.Connection], T]
    # NOTE: only a write that waits for another's transaction waits on an event: a lone write
    # leads its own and needs none.
    settled: threading.Event | None = None
    lead: bool = False
    value: Any = None
    error: StoreError | None = None

    def outcome(self) -> T:
        if self.error is not None:
            raise self.error
        result: T = self.value
        return result


class DurableWrites:
    """Runs durable writes in the store's file, many per transaction when they come together.

    Args:
        pool: The store's connections.
    """

    def __init__(self, pool: Connections) -> None:
        self._pool = pool
        self._reset()

    def _reset(self) -> None:
        self._pid = os.getpid()
        self._lock = threading.Lock()
        self._queued: list[_Write[Any]] = []
        self._leading = False

    def run(self, apply: Callable[[sqlite3.Connection], T]) -> T:
        """``apply(conn)``'s value, once the transaction that ran it is on disk.

        ``apply`` runs inside a ``BEGIN IMMEDIATE`` transaction with other threads' writes: it
        must only execute statements and return what they found.

        Raises:
            StoreError: The transaction that carried it failed; nothing of it was written.
        """
        if os.getpid() != self._pid:
            self._reset()  # NOTE: a thread of the parent may have been leading at the fork
        # NOTE: waiting on the disk, with its turn given away: concurrent requests reach the
        # commit meanwhile and share its fsync, where few running at once would each pay one.
        with blocking():
            return self._run(apply)

    def _run(self, apply: Callable[[sqlite3.Connection], T]) -> T:
        mine: _Write[T] = _Write(apply)
        with self._lock:
            self._queued.append(mine)
            if not self._leading:
                self._leading = mine.lead = True
            else:
                mine.settled = threading.Event()
        if mine.settled is not None:
            mine.settled.wait()
            if not mine.lead:
                return mine.outcome()
        with self._lock:
            batch, self._queued = self._queued, []
        try:
            self._commit(batch)
        finally:
            with self._lock:
                if self._queued:
                    following = self._queued[0]
                    following.lead = True
                    _settle(following)
                else:
                    self._leading = False
        return mine.outcome()

    def _commit(self, batch: list[_Write[Any]]) -> None:
        try:
            with self._pool.write(durable=True) as conn:
                values = [write.apply(conn) for write in batch]
        except Exception as exc:  # every waiter must hear of it, or it would wait forever
            error = exc if isinstance(exc, StoreError) else StoreError(f"writing failed: {exc}")
            for write in batch:
                write.error = error
        else:
            for write, value in zip(batch, values, strict=True):
                write.value = value
        for write in batch:
            if not write.lead:
                _settle(write)


def _settle(write: _Write[Any]) -> None:
    """Wake a write that waits (every write but a transaction's leader waits)."""
    assert write.settled is not None  # NOTE: made under the lock when the write queued
    write.settled.set()
