"""The multiprocess metrics' files: private, allocated before use, folded in when a worker exits.

prometheus-client keeps each process's values in memory-mapped files (``counter_<pid>.db``,
...) in ``PROMETHEUS_MULTIPROC_DIR``. Three things about them are the host's:

- They are created 0600 (the folder is 0700), and their space is allocated with
  ``posix_fallocate`` before it is mapped: a file grown by ``truncate`` is sparse, and touching
  a page the full filesystem cannot back kills the process with SIGBUS; allocated first, a full
  disk is an ``OSError`` (ENOSPC) the caller can handle.
- When a worker exits, the master adds its counters and histograms to one ``*_archive.db`` file
  per type and removes its files, so the sums stay right (a counter never goes down) while the
  folder holds one set of files per live worker, however many reloads and restarts there were.
- :func:`probe` says whether the folder takes a new file now (for ``/readyz``).
"""

from __future__ import annotations

import contextlib
import glob
import os
from collections import defaultdict
from typing import Any

from prometheus_client import multiprocess, values
from prometheus_client.mmap_dict import MmapedDict

__all__ = ["install", "probe", "retire"]

#: The types whose values add up over processes, so a dead worker's values can be folded in.
_SUMMED = ("counter", "histogram", "summary")

_PAGE = 1 << 16


class _AllocatedDict(MmapedDict):
    """prometheus-client's file of values, 0600 and allocated before it is mapped."""

    def __init__(self, filename: str, read_mode: bool = False) -> None:
        if not read_mode:
            _allocate(filename, _PAGE)
        super().__init__(filename, read_mode)  # type: ignore[no-untyped-call]

    def _init_value(self, key: str) -> None:
        # NOTE: an entry is 4 bytes of length, the key padded to 8, and 16 bytes of value.
        needed = self._used + len(key.encode("utf-8")) + 28
        capacity = self._capacity
        while needed > capacity:
            capacity *= 2
        if capacity > self._capacity:
            os.posix_fallocate(self._f.fileno(), 0, capacity)
        super()._init_value(key)  # type: ignore[no-untyped-call]


def _allocate(filename: str, size: int) -> None:
    """Create ``filename`` 0600 if missing, with at least ``size`` bytes really allocated.

    Raises:
        OSError: The space cannot be allocated (a full disk). The file is removed first if
            it is still empty: an empty one is no file of values, and whoever reads the folder
            (a scrape, the master folding in an exited worker) would fail on it.
    """
    fd = os.open(filename, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
    try:
        if os.fstat(fd).st_size < size:
            try:
                os.posix_fallocate(fd, 0, size)
            except OSError:
                if os.fstat(fd).st_size == 0:
                    os.unlink(filename)
                raise
    finally:
        os.close(fd)


def install() -> None:
    """Make prometheus-client's multiprocess values use allocated, private files.

    NOTE: prometheus-client has no setting for how it creates its files; its multiprocess
    values look ``MmapedDict`` up in their module on every new file, so this is where it goes.
    """
    setattr(values, "MmapedDict", _AllocatedDict)  # noqa: B010 (untyped module attribute)


def probe(folder: str) -> str | None:
    """Why ``folder`` cannot take a new metrics file now, or None."""
    path = os.path.join(folder, f".probe-{os.getpid()}.tmp")
    try:
        _allocate(path, 4096)
    except OSError as exc:
        return f"the metrics folder {folder} cannot be written: {exc.strerror or exc}"
    finally:
        with contextlib.suppress(OSError):
            os.unlink(path)
    return None


def retire(pid: int, folder: str) -> None:
    """Fold the exited process ``pid``'s counters and histograms into the archive; remove its files.

    Raises:
        OSError: The archive cannot be written (a full disk); the process's files then stay,
            so nothing is lost from the sums.
    """
    for typ in _SUMMED:
        dead = os.path.join(folder, f"{typ}_{pid}.db")
        if os.path.exists(dead):
            _fold(dead, os.path.join(folder, f"{typ}_archive.db"))
            # NOTE: right after the swap, so a scrape counts its values twice for an instant at
            # most (never misses them); multiprocess.MultiProcessCollector has no lock to hold.
            os.unlink(dead)
    # Gauges: the live ones describe running processes only, and the host has no other kind.
    multiprocess.mark_process_dead(pid, folder)  # type: ignore[no-untyped-call]
    for path in glob.glob(os.path.join(folder, f"*_{pid}.db")):
        with contextlib.suppress(FileNotFoundError):
            os.unlink(path)


def _fold(dead: str, archive: str) -> None:
    """Write ``archive`` anew as itself plus ``dead``, key by key, and swap it in at once."""
    sums: dict[str, float] = defaultdict(float)
    for path in (archive, dead):
        # NOTE: an empty file holds no values (one left by a process killed between creating
        # and allocating it); prometheus-client cannot read it.
        if os.path.exists(path) and os.path.getsize(path) > 0:
            found = MmapedDict.read_all_values_from_file(path)  # type: ignore[no-untyped-call]
            for key, value, _timestamp, _pos in found:
                sums[key] += value
    # NOTE: not ending in .db, so a scrape never reads it half written.
    fresh = archive + ".new"
    with contextlib.suppress(FileNotFoundError):
        os.unlink(fresh)
    written: Any = _AllocatedDict(fresh)
    try:
        for key, value in sums.items():
            written.write_value(key, value, 0.0)
    finally:
        written.close()
    os.replace(fresh, archive)
