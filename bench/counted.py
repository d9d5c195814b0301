"""Section 4: instructions per call in process, this checkout against the issue's base revision.

Issue 43 holds a plain call and an exchange each to 60% of the instructions ``f439c5e`` runs,
counted by callgrind in process (:mod:`bench.instructions`: the host's app without sockets or
gunicorn, the difference of two runs, each thread apart). This section makes a git worktree of
the base in the run's scratch folder, counts it and this checkout one after the other, and
removes the worktree, so that one run of ``bench/run.py`` prints the count beside the served
ratios. Some five minutes; it needs valgrind and the base revision in the clone's history.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path
from typing import Any

from bench.instructions import ROOT, per_call

__all__ = ["BASE", "TARGET", "measure"]

#: The revision issue 43 counts against, and the most of its count a call may run.
BASE = "f439c5e"
TARGET = 0.60


def measure(
    work: Path, base: str = BASE, kinds: tuple[str, ...] = ("plain", "exchange")
) -> tuple[dict[str, Any] | None, str | None]:
    """Each kind's instructions per call by thread, ``base`` and this checkout: (the counts,
    None), or (None, why there are none)."""
    if shutil.which("valgrind") is None:
        return None, "needs valgrind (Debian's valgrind package)"
    tree = work / f"base-{base}"
    made = _git("worktree", "add", "--detach", "--force", str(tree), base)
    if made.returncode != 0:
        return None, f"git worktree add {base}: {made.stderr.strip()[-300:]}"
    try:
        counts = {
            kind: {"base": per_call(tree, kind), "this": per_call(ROOT, kind)} for kind in kinds
        }
    except (subprocess.CalledProcessError, RuntimeError, ValueError, OSError) as exc:
        return None, f"{type(exc).__name__}: {exc}"
    finally:
        _git("worktree", "remove", "--force", str(tree))
    return {"base": base, "counts": counts}, None


def _git(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["git", "-C", str(ROOT), *args], capture_output=True, text=True, check=False, timeout=120
    )
