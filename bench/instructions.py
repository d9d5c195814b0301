"""Instructions per call in process, counted by callgrind: a figure noise leaves alone.

On a shared machine one build's served figures move by a fifth between rounds, more than most
changes are worth, and even in-process timings drift by several percent. ``valgrind
--tool=callgrind`` counts the instructions a process runs instead: the same build, inputs and
environment give the same count within about 1%, whatever else the machine does. This runs the
host's WSGI app in process (as :mod:`bench.machinery` does: no sockets, no gunicorn) for plain
calls and exchanges, twice per build with different numbers of calls, and prints the difference
per call, so start-up and warm-up cancel out; with two builds or more, each one's ratio to the
first.

Usage (each tree a checkout of the host, a ``git worktree`` of the commit to compare with, say)::

    .venv/bin/python bench/instructions.py . /tmp/before --kinds plain,exchange

NOTE: a count, not a time. It sees no cache misses, waits or kernel work (a commit's fsync, a
thread switch): a change that only saves those (a page less written per commit) shows here as
nothing, and one that saves instructions may still save less time. Needs valgrind.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

__all__ = ["callgrind_total", "command_line", "count", "main", "per_call", "report"]

ROOT = Path(__file__).resolve().parent.parent
PYTHON = ROOT / ".venv" / "bin" / "python"
#: Calls per run: the two runs differ by ``calls[kind]``, after the same warm-up.
CALLS = {"plain": 500, "exchange": 100}
_WARM_UP = 100

_LOOP = """
import sys
sys.path.insert(0, ".")
from bench.machinery import _Client
from host.web.wsgi import app
client = _Client(app)
call = client.plain if sys.argv[1] == "plain" else client.exchange
for _ in range(int(sys.argv[2]) + int(sys.argv[3])):
    call()
"""


def count(tree: Path, kind: str, calls: int) -> list[int]:
    """Instructions of each thread of one process that makes ``calls`` calls of ``kind`` (after
    the warm-up), in the order the threads started: the request's thread first."""
    with tempfile.TemporaryDirectory(prefix="host-instructions-") as scratch:
        data = Path(scratch)
        env = {k: v for k, v in os.environ.items() if not k.startswith("HOST_")}
        env.update(
            HOST_SPECS=str(ROOT / "specs"),
            HOST_HANDLERS=str(ROOT / "handlers"),
            HOST_DATA_DIR=str(data),
            HOST_SECRET="ab" * 32,
            HOST_STORE=f"sqlite:///{data / 'store.db'}",
            HELPDESK_DB=str(data / "helpdesk.db"),
        )
        out = data / "callgrind.out"
        subprocess.run(
            ["valgrind", "--tool=callgrind", "--separate-threads=yes",
             f"--callgrind-out-file={out}", str(PYTHON), "-c",
             _LOOP, kind, str(_WARM_UP), str(calls)],
            cwd=tree, env=env, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        )  # fmt: skip
        parts = sorted(data.glob("callgrind.out-*"), key=lambda p: int(p.name.rsplit("-", 1)[1]))
        return [callgrind_total(part.read_text()) for part in parts]


def callgrind_total(text: str) -> int:
    """The instruction total of a callgrind output file."""
    for line in text.splitlines():
        if line.startswith(("summary:", "totals:")):
            return int(line.split()[1])
    raise ValueError("no totals in the callgrind output")


def per_call(tree: Path, kind: str) -> list[float]:
    """Instructions per call of ``kind`` in ``tree`` by thread: two runs' difference, made side
    by side. The threads are the request's, then the host's own in the order they started (the
    store's journal, the handler pool, the audit writer)."""
    extra = CALLS[kind]
    with ThreadPoolExecutor(2) as runs:
        short, long = runs.map(lambda n: count(tree, kind, n), (extra // 10, extra + extra // 10))
    if len(short) != len(long):
        raise RuntimeError(f"the two runs started {len(short)} and {len(long)} threads")
    return [(b - a) / extra for a, b in zip(short, long, strict=True)]


def command_line(doc: str, argv: list[str] | None) -> tuple[list[Path], list[str]] | None:
    """A count's trees and kinds from its command line; None (said why) without valgrind.

    Raises:
        SystemExit: With the usage, for a kind that is neither plain nor exchange.
    """
    parser = argparse.ArgumentParser(description=doc.split("\n\n")[0])
    parser.add_argument("trees", nargs="+", type=Path, help="checkouts of the host to count")
    parser.add_argument("--kinds", default="plain,exchange", help="plain, exchange or both")
    args = parser.parse_args(argv)
    kinds = [k for k in args.kinds.split(",") if k]
    unknown = set(kinds) - set(CALLS)
    if unknown:
        parser.error(f"unknown kinds: {', '.join(sorted(unknown))} (plain, exchange)")
    if shutil.which("valgrind") is None or shutil.which("callgrind_control") is None:
        print("counting instructions needs valgrind (Debian's valgrind package)", file=sys.stderr)
        return None
    return args.trees, kinds


def report(
    doc: str, argv: list[str] | None, count_of: Callable[[Path, str], list[float]], what: str = ""
) -> int:
    """Print ``count_of(tree, kind)`` per call for the trees and kinds asked, and each tree's
    ratio to the first; ``count_of`` gives one figure, or one for each thread."""
    asked = command_line(doc, argv)
    if asked is None:
        return 2
    trees, kinds = asked
    for kind in kinds:
        first: float | None = None
        for tree in trees:
            threads = count_of(tree.resolve(), kind)
            figure = sum(threads)
            first = first or figure
            apart = " + ".join(f"{t / 1000:,.1f}k" for t in threads)
            apart = f"  (by thread: {apart})" if len(threads) > 1 else ""
            print(f"{kind:8}  {figure / 1000:9,.1f}k instructions per call{what}"
                  f"  x{figure / first:.3f}  {tree}{apart}", flush=True)  # fmt: skip
    return 0


def main(argv: list[str] | None = None) -> int:
    """Print instructions per call for each tree and kind, and each tree's ratio to the first."""
    return report(__doc__, argv, per_call)


if __name__ == "__main__":
    sys.exit(main())
