"""Who may change the tokens file: ssh's StrictModes, for the file and the folder it is in.

The tokens file decides who gets in, so whoever can write it, or replace it in its folder, can let
themselves in. It is accepted only when it is owned by the user serving (or root) and not
writable by group or others, and when its folder is not writable by group or others either,
unless that folder is sticky (like ``/tmp``: nobody but a file's owner may rename or remove it)
and owned by the user or root.
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
    """Why the folder holding the tokens file at ``path`` lets others replace it, or None."""
    folder = path.parent
    try:
        found = folder.stat()
    except OSError:
        return None  # no folder: no file either, and nothing can be written there
    mode = stat.S_IMODE(found.st_mode)
    if not mode & _OTHERS_WRITE:
        return None
    if mode & stat.S_ISVTX and _trusted(found.st_uid):
        return None
    if mode & stat.S_ISVTX:
        return (
            f"the tokens file {path} is in {folder}, a shared folder (mode {mode:04o}) owned by "
            f"{_user(found.st_uid)}, who may replace the file; keep the tokens file in a folder "
            f"of your own (mkdir -m 700 DIR), or run: chown {_me()} {folder}"
        )
    return (
        f"the tokens file {path} is in {folder}, which group or others may write (mode "
        f"{mode:04o}, owner {_user(found.st_uid)}), so they could replace the file; run: "
        f"chmod go-w {folder}"
    )


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
