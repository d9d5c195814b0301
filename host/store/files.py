"""Private files and folders: what the host keeps on disk is readable by its own user only.

The store's database holds act results and relayed answers (what users typed); the data directory
holds the generated secret. Folders the host creates are 0700 and files 0600, whatever the umask.
"""

from __future__ import annotations

import logging
import os
import stat
from pathlib import Path

__all__ = ["FileIdentity", "private_dir", "private_file"]

log = logging.getLogger("host.store")


def private_dir(path: str | Path) -> Path:
    """Create the folder ``path`` (and its parents) if missing, and make it private (0700).

    A folder that exists already is tightened to 0700 only if this user owns it and it is not a
    shared folder (one with the sticky bit, like ``/tmp``): other folders are left as they are.
    Parents it creates get the default mode; only ``path`` itself is the host's.

    Returns:
        The folder's path.

    Raises:
        OSError: The folder cannot be created or changed.
    """
    folder = Path(path)
    try:
        folder.mkdir(mode=0o700)
    except FileExistsError:
        if not folder.is_dir():
            raise NotADirectoryError(f"{folder} exists and is not a folder") from None
        _tighten(folder)
    except FileNotFoundError:
        folder.parent.mkdir(parents=True, exist_ok=True)
        folder.mkdir(mode=0o700, exist_ok=True)
        os.chmod(folder, 0o700)  # mkdir's mode is filtered by the umask
    else:
        os.chmod(folder, 0o700)
    return folder


def private_file(path: str | Path) -> Path:
    """Create the empty file ``path`` as 0600 if missing; tighten it to 0600 if this user owns it.

    Raises:
        OSError: The file cannot be created or changed.
    """
    file = Path(path)
    try:
        fd = os.open(file, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:
        _tighten(file)
    else:
        try:
            os.fchmod(fd, 0o600)
        finally:
            os.close(fd)
    return file


def _tighten(path: Path) -> None:
    """Take group and other access away from ``path`` if it is ours and not a shared folder."""
    info = path.stat()
    mode = stat.S_IMODE(info.st_mode)
    if not mode & 0o077 or info.st_uid != os.geteuid() or mode & stat.S_ISVTX:
        return
    os.chmod(path, mode & ~0o077)
    log.info("made %s private (it was readable by others)", path)


class FileIdentity:
    """Which file a path named when it was opened (device and inode), to notice it is replaced.

    Args:
        path: The file; it must exist.
    """

    def __init__(self, path: Path) -> None:
        self.path = path
        info = path.stat()
        self._id = (info.st_dev, info.st_ino)

    def problem(self) -> str | None:
        """None if ``path`` still names the same file; else what happened to it, in a sentence."""
        try:
            info = self.path.stat()
        except FileNotFoundError:
            return f"the file {self.path} was deleted while it was open"
        except OSError as exc:
            return f"the file {self.path} cannot be checked: {exc}"
        if (info.st_dev, info.st_ino) != self._id:
            return f"the file {self.path} was replaced by another file while it was open"
        return None
