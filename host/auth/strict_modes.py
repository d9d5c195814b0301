"""Who may change the tokens file: ssh's StrictModes, for the file and every folder above it.

The tokens file decides who gets in, so whoever can write it, or replace it or any folder on the
way to it, can let themselves in. It is accepted only when it is owned by the user serving (or
root) and not writable by group or others, and when every folder from its own up to ``/`` is
owned by the user or root and not writable by group or others either, unless that folder is
sticky (like ``/tmp``: nobody but an entry's owner may rename or remove it).
"""

from __future__ import annotations

import os
import pwd
import stat
from pathlib import Path

__all__ = ["directory_problem", "file_problem"]

_OTHERS_WRITE = stat.S_IWGRP | stat.S_IWOTH


def file_problem(path: Path, found: os.stat_result) -> str | None:
    """Why the tokens file at ``path`` (as ``found``) may be changed by someone else, or None."""
    mode = stat.S_IMODE(found.st_mode)
    if not _trusted(found.st_uid):
        return (
            f"the tokens file {path} is owned by {_user(found.st_uid)}, not by "
            f"{_user(os.geteuid())} who serves it (mode {mode:04o}); whoever owns it decides who "
            f"gets in. If it is yours, run: chown {_me()} {path} && chmod 600 {path}"
        )
    if mode & _OTHERS_WRITE:
        return (
            f"the tokens file {path} is writable by group or others (mode {mode:04o}, owner "
            f"{_user(found.st_uid)}); run: chmod 600 {path}"
        )
    return None


def directory_problem(path: Path) -> str | None:
    """Why a folder above the tokens file at ``path`` lets someone else replace it, or None.

    Every folder from the file's own up to ``/`` is checked, along the path as given and along
    the path with its links resolved (whoever may replace a link may point it elsewhere), as
    ssh's StrictModes does for ``authorized_keys``.
    """
    for folder in _folders(path):
        try:
            found = folder.stat()
        except OSError:
            continue  # no folder: nothing can be written there, nor the file be in it
        problem = _folder_problem(path, folder, found)
        if problem is not None:
            return problem
    return None


def _folders(path: Path) -> list[Path]:
    """The folders above ``path``, nearest first, as given and with links resolved."""
    given = Path(os.path.abspath(path))
    found: list[Path] = []
    for start in (given, given.resolve()):
        for folder in start.parents:
            if folder not in found:
                found.append(folder)
    return found


def _folder_problem(path: Path, folder: Path, found: os.stat_result) -> str | None:
    """Why ``folder`` (as ``found``), above the tokens file ``path``, is not safe, or None.

    NOTE: unlike ssh, a sticky folder others may write (``/tmp``) is accepted when root or the
    user owns it: nobody else may rename or remove what is in it, and its entry on the way to
    the file is checked in turn.
    """
    mode = stat.S_IMODE(found.st_mode)
    where = "in" if folder == Path(os.path.abspath(path)).parent else "inside"
    if not _trusted(found.st_uid):
        if mode & stat.S_ISVTX and mode & _OTHERS_WRITE:
            return (
                f"the tokens file {path} is {where} {folder}, a shared folder (mode {mode:04o}) "
                f"owned by {_user(found.st_uid)}, who may replace the file; keep the tokens file "
                f"in a folder of your own (mkdir -m 700 DIR), or run: chown {_me()} {folder}"
            )
        return (
            f"the tokens file {path} is {where} {folder}, owned by {_user(found.st_uid)} (mode "
            f"{mode:04o}), who may replace the file or what leads to it; keep the tokens file "
            f"in a folder of your own, or run: chown {_me()} {folder}"
        )
    if mode & _OTHERS_WRITE and not mode & stat.S_ISVTX:
        return (
            f"the tokens file {path} is {where} {folder}, which group or others may write (mode "
            f"{mode:04o}, owner {_user(found.st_uid)}), so they could replace the file; run: "
            f"chmod go-w {folder}"
        )
    return None


def _trusted(uid: int) -> bool:
    return uid in (0, os.geteuid())


def _me() -> str:
    """The serving user as ``chown`` takes it."""
    user = _user(os.geteuid())
    return str(os.geteuid()) if user.startswith("uid ") else user


def _user(uid: int) -> str:
    try:
        return pwd.getpwuid(uid).pw_name
    except KeyError:
        return f"uid {uid}"
