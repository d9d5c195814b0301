"""What an act claim costs: claim and record, on SQLite (with and without fsync) and Redis.

The SQLite store commits act claims and results with ``synchronous = FULL`` (an fsync of the
write-ahead log per commit, so they survive a power loss) and other records with ``NORMAL``. This
measures a claim followed by its record both ways, on the disk the database is on, beside a plain
``put``; and the same claim and record on Redis. It prints figures and asserts nothing:
``python bench/acts.py [--count N] [--dir DIR] [--redis-url URL]``.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from bench.waiting import _redis_server  # noqa: E402
from host.store import ActClaim, Store, open_store  # noqa: E402
from host.store.sqlite import SqliteBackend  # noqa: E402
from host.store.sqlite import acts as sqlite_acts  # noqa: E402


def _times(count: int, once: Callable[[int], None]) -> list[float]:
    spent = []
    for n in range(count):
        began = time.perf_counter()
        once(n)
        spent.append(time.perf_counter() - began)
    return spent


def _line(name: str, spent: list[float]) -> None:
    spent = sorted(spent)
    print(
        f"{name:<40} {1e3 * statistics.median(spent):>9.3f} "
        f"{1e3 * spent[int(0.95 * (len(spent) - 1))]:>9.3f} {len(spent) / sum(spent):>9.0f}"
    )


def sqlite(folder: Path, count: int) -> None:
    """Claim + record with FULL (as shipped) and NORMAL, and a put, on one SQLite file."""
    backend = SqliteBackend(folder / "acts.db")
    store = Store(backend)
    pool = backend.pool  # NOTE: a benchmark may reach in; NORMAL is not something the store offers

    def shipped(n: int) -> None:
        claim = store.claim_act(f"full-{n}", ttl_s=600, incident="bench")
        assert isinstance(claim, ActClaim)
        claim.record("result")

    def normal(n: int) -> None:
        with pool.write() as conn:
            sqlite_acts.claim(conn, f"normal-{n}", "token", "bench", 600, 5.0)
        with pool.write() as conn:
            sqlite_acts.record(conn, f"normal-{n}", "token", "bench", "result", 600)

    _line("sqlite claim+record, synchronous=FULL", _times(count, shipped))
    _line("sqlite claim+record, synchronous=NORMAL", _times(count, normal))
    _line(
        "sqlite put (NORMAL), for comparison", _times(count, lambda n: store.put(f"p{n}", "v", 60))
    )
    store.close()


def redis(url: str, count: int) -> None:
    """Claim + record on Redis."""
    store = open_store(url)

    def cycle(n: int) -> None:
        claim = store.claim_act(f"bench-{time.time_ns()}-{n}", ttl_s=600, incident="bench")
        assert isinstance(claim, ActClaim)
        claim.record("result")

    _line("redis claim+record", _times(count, cycle))
    store.close()


def main(argv: Sequence[str] | None = None) -> int:
    """Measure and print; returns the exit status."""
    parser = argparse.ArgumentParser(prog="bench/acts.py", description=__doc__.split("\n")[0])
    parser.add_argument("--count", type=int, default=500)
    parser.add_argument("--dir", type=Path, help="where the SQLite file goes (its disk matters)")
    parser.add_argument("--redis-url", help="an existing Redis (its db is written to)")
    args = parser.parse_args(argv)
    print(f"{'operation':<40} {'median ms':>9} {'p95 ms':>9} {'per s':>9}")
    with tempfile.TemporaryDirectory(dir=args.dir) as folder:
        sqlite(Path(folder), args.count)
    if args.redis_url:
        redis(args.redis_url, args.count)
    else:
        with _redis_server() as url:
            redis(url, args.count)
    return 0


if __name__ == "__main__":
    sys.exit(main())
