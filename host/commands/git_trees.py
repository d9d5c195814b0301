"""Spec and handler folders as they were at a git revision, for ``host diff REV..REV``.

Each revision's folders are written by ``git archive`` into a temporary directory (removed when
the block ends): the work tree, the index and the checked-out branch are never touched.
"""

from __future__ import annotations

import io
import subprocess
import tarfile
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from host.errors import HostError

__all__ = ["at_revision", "split_range"]


def split_range(text: str) -> tuple[str, str] | None:
    """``OLD..NEW`` as its two revisions (an empty side is ``HEAD``); None for anything else."""
    if ".." not in text or "..." in text:
        return None
    old, new = text.split("..", 1)
    return old or "HEAD", new or "HEAD"


def _git(args: list[str], cwd: Path) -> bytes:
    try:
        done = subprocess.run(["git", *args], cwd=cwd, capture_output=True, check=False)
    except FileNotFoundError:
        raise HostError("git is not installed, so revisions cannot be read") from None
    if done.returncode != 0:
        said = done.stderr.decode(errors="replace").strip().splitlines()
        raise HostError(f"git {args[0]}: {said[-1] if said else 'failed'}")
    return done.stdout


@contextmanager
def at_revision(revision: str, specs: Path, handlers: Path) -> Iterator[tuple[Path, Path]]:
    """``specs`` and ``handlers`` (paths in this work tree) as they were at ``revision``.

    Raises:
        HostError: Not a git work tree, an unknown revision, or no ``specs`` at it.
    """
    top = Path(_git(["rev-parse", "--show-toplevel"], Path.cwd()).decode().strip())
    try:
        commit = _git(["rev-parse", "--verify", f"{revision}^{{commit}}"], top).decode().strip()
    except HostError:
        raise HostError(f"{revision!r} is not a revision of the git work tree at {top}") from None
    inside = [_inside(p, top) for p in (specs, handlers)]
    if not _exists(top, commit, inside[0]):
        raise HostError(f"{revision} has no {inside[0]} (no spec files there at that revision)")
    with tempfile.TemporaryDirectory(prefix="host-diff-") as temporary:
        root = Path(temporary)
        for path in (p for p in inside if _exists(top, commit, p)):
            data = _git(["archive", "--format=tar", commit, "--", path], top)
            with tarfile.open(fileobj=io.BytesIO(data)) as archive:
                archive.extractall(root, filter="data")
        yield root / inside[0], root / inside[1]


def _inside(path: Path, top: Path) -> str:
    try:
        return str(path.resolve().relative_to(top.resolve())) or "."
    except ValueError:
        raise HostError(f"{path} is outside the git work tree at {top}") from None


def _exists(top: Path, commit: str, path: str) -> bool:
    return bool(_git(["ls-tree", "--name-only", commit, "--", path], top).strip())
