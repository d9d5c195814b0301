"""The audit trail exported to a file: one JSON line per record, rotated by size.

``HOST_AUDIT_EXPORT=file:PATH`` appends each record, in ``seq`` order, as one line of JSON (the
record ``host audit --format json`` prints, with its ``seq``, ``prev`` and ``hash``). When the
file passes ``HOST_AUDIT_EXPORT_MAX`` bytes it is renamed ``PATH.<last seq, 12 digits>`` and a
new one begun; rotated files are never deleted (the export is the trail kept for years).

The file is its own cursor: whoever exports takes an exclusive lock on ``PATH.lock`` (every
worker of the machine tries; one at a time wins), reads the last complete line's ``seq`` and
appends from the next one. A line cut short by a writer that died, or by a full disk, is cut off
before writing on, so the export has no gap and no duplicate whatever stopped it.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
from collections.abc import Iterator, Sequence
from pathlib import Path

__all__ = ["FileSink"]
#: How much of the file's end is read to find its last line.
_TAIL = 1 << 20


class FileSink:
    """Appends lines to ``path``, rotating it past ``max_bytes``.

    Args:
        path: The export file.
        max_bytes: The size past which it is rotated.
    """

    def __init__(self, path: Path, max_bytes: int) -> None:
        self.path = path
        self.max_bytes = max_bytes
        self.where = f"file:{path}"

    @contextlib.contextmanager
    def turn(self) -> Iterator[int | None]:
        """This process's turn to export: the last seq exported, or None (another has it).

        Raises:
            OSError: The file or its folder cannot be read or written.
        """
        self.path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(f"{self.path}.lock", os.O_RDWR | os.O_CREAT, 0o600)
        try:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                yield None
                return
            yield self._last_seq()
        finally:
            os.close(fd)  # NOTE: closing it releases the lock

    def _last_seq(self) -> int:
        """The seq of the file's last whole line (a partial one cut off first); else the rotated
        files' newest, else 0."""
        if self.path.exists() and self.path.stat().st_size:
            with self.path.open("rb+") as f:
                size = f.seek(0, os.SEEK_END)
                f.seek(max(0, size - _TAIL))
                tail = f.read()
                whole = tail[: tail.rfind(b"\n") + 1]
                if len(whole) < len(tail):  # a line cut short: never exported
                    f.truncate(size - (len(tail) - len(whole)))
                lines = whole.splitlines()
                if lines:
                    return int(json.loads(lines[-1])["seq"])
        rotated = [int(p.suffix[1:]) for p in self.path.parent.glob(self.path.name + ".*")
                   if p.suffix[1:].isdigit()]  # fmt: skip
        return max(rotated, default=0)

    def write(self, lines: Sequence[tuple[int, str]]) -> None:
        """Append ``lines`` (each ``(seq, json)``), in order, rotating first if due.

        Raises:
            OSError: The file cannot be written (what was written whole stays).
        """
        if self.path.exists() and self.path.stat().st_size >= self.max_bytes:
            last = self._last_seq()
            os.replace(self.path, self.path.with_name(f"{self.path.name}.{last:012d}"))
        data = "".join(text + "\n" for _, text in lines).encode("utf-8")
        fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
        try:
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view) :]
            os.fsync(fd)
        finally:
            os.close(fd)
