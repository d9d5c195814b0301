"""What the audit chain costs per audited call, beside what the audit record itself costs.

Measured in one run, in process, on a real SQLite store, for records shaped like a call's (a few
arguments, one answer, an approval request with two decisions), written in batches of 100 as the
audit writer writes them:

- **record**: making the record from the call's last round (redaction, bounding) and writing it
  as the store wrote it before the chain: its JSON and one upsert row per call;
- **chain**: what the chain adds: the chained write (the entry's canonical JSON, RFC 8785, its
  SHA-256, the head and the call's rank read under the write lock, a checkpoint every 1,000
  entries, Ed25519, and the row with its indexes) less the write it replaces.

It prints each part's time per call and the chain's ratio to the record's; with valgrind, also
each part's instructions per call, counted by callgrind (two runs of different sizes, so start-up
cancels out): a figure the machine's noise leaves alone. Without valgrind it says so.

Usage: ``.venv/bin/python bench/audit_chain.py [--calls 5000] [--no-callgrind]``
"""

from __future__ import annotations

import argparse
import shutil
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from host.machine import Decided  # noqa: E402
from host.observers.audit import audit_record  # noqa: E402
from host.protocol.events import Round  # noqa: E402
from host.store.chain import Chain, prepare  # noqa: E402
from host.store.records import ACTED, AuditRecord  # noqa: E402
from host.store.signing import Signer  # noqa: E402
from host.store.sqlite import audit as chained  # noqa: E402

__all__ = ["main", "measure"]

BATCH = 100
_V3_TABLE = """
CREATE TABLE IF NOT EXISTS v3_audit (seq INTEGER PRIMARY KEY, id TEXT NOT NULL UNIQUE,
  at REAL NOT NULL, principal TEXT NOT NULL, tool TEXT NOT NULL, rank INTEGER NOT NULL,
  body TEXT NOT NULL);
CREATE INDEX IF NOT EXISTS v3_audit_at ON v3_audit (at);
CREATE INDEX IF NOT EXISTS v3_audit_tool ON v3_audit (tool, at);
"""
_V3_UPSERT = (
    "INSERT INTO v3_audit (id, at, principal, tool, rank, body) VALUES (?, ?, ?, ?, ?, ?)"
    " ON CONFLICT (id) DO UPDATE SET body = excluded.body WHERE excluded.rank > v3_audit.rank"
)


def _round(n: int) -> Round:
    decisions = tuple(
        {"principal": who, "verdict": "approve", "reason": "checked the dashboard", "at": 1.8e9}
        for who in ("bob", "carol")
    )
    return Round(
        "restart_service", 2, "alice", time.monotonic(), nonce=f"nonce-{n:08d}", ends=True,
        outcome="complete", acted=True, call_started=time.time() - 0.2,
        arguments={"service": f"api-{n}", "environment": "prod", "reason": "deploy 4711"},
        call_answers={"restart": {"action": "accept", "content": {"confirm": True}}},
        approval=Decided("approved", f"apr_{n}", 2, 1.8e9 + 3600, ("ops:approve",),
                         ("bob", "carol"), "checked", decisions),
    )  # fmt: skip


def _make(rounds: list[Round]) -> list[AuditRecord]:
    """The record made from the call's last round (redacted, bounded)."""
    return [audit_record(r, time.time(), 16384) for r in rounds]


def _write_v3(conn: sqlite3.Connection, records: list[AuditRecord]) -> None:
    """The records written as the store wrote them before the chain: one upsert row each."""
    with conn:
        conn.execute("BEGIN IMMEDIATE")
        conn.executemany(
            _V3_UPSERT,
            [(r.id, r.time, r.principal, r.tool, ACTED, r.body()) for r in records],
        )


def _chain_part(conn: sqlite3.Connection, chain: Chain, records: list[AuditRecord]) -> None:
    """The chain's work: entries' canonical JSON and hash, the head and ranks, checkpoints."""
    prepared = [prepare(r, ACTED) for r in records]
    with conn:
        conn.execute("BEGIN IMMEDIATE")
        chained.append(conn, chain, prepared, time.time())


def measure(calls: int, part: str = "both") -> dict[str, float]:
    """Seconds per call of each part, over ``calls`` calls in batches (medians of batches)."""
    with tempfile.TemporaryDirectory(prefix="host-bench-chain-") as scratch:
        conn = sqlite3.connect(Path(scratch) / "store.db", isolation_level=None)
        conn.execute("PRAGMA journal_mode = WAL")
        conn.execute("PRAGMA synchronous = NORMAL")  # NOTE: as the store's audit writes
        conn.executescript(_V3_TABLE + chained.SCHEMA)
        chain = Chain(Signer.derived("bench-" * 6))
        times: dict[str, list[float]] = {"make": [], "write": [], "chained": []}
        for start in range(0, calls, BATCH):
            rounds = [_round(n) for n in range(start, start + BATCH)]
            began = time.perf_counter()
            records = _make(rounds)
            times["make"].append((time.perf_counter() - began) / BATCH)
            if part == "make":
                continue
            began = time.perf_counter()
            _write_v3(conn, records)
            times["write"].append((time.perf_counter() - began) / BATCH)
            if part == "record":
                continue
            began = time.perf_counter()
            _chain_part(conn, chain, records)
            times["chained"].append((time.perf_counter() - began) / BATCH)
        conn.close()
    return {k: statistics.median(v) for k, v in times.items() if v}


def _instructions(part: str, calls: int) -> int:
    with tempfile.TemporaryDirectory(prefix="host-bench-cg-") as scratch:
        out = Path(scratch) / "callgrind.out"
        subprocess.run(
            ["valgrind", "--tool=callgrind", f"--callgrind-out-file={out}", sys.executable,
             __file__, "--only", part, "--calls", str(calls)],
            check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        )  # fmt: skip
        for line in out.read_text().splitlines():
            if line.startswith(("summary:", "totals:")):
                return int(line.split()[1])
    raise ValueError("no totals in the callgrind output")


def _per_call(count: Callable[[str, int], int], part: str, calls: int) -> float:
    """Instructions per call of ``part``: two runs' difference, so start-up cancels out."""
    return (count(part, calls + BATCH) - count(part, BATCH)) / calls


def main(argv: list[str] | None = None) -> int:
    """Print the chain's cost per audited call beside the record's own, and their ratio."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--calls", type=int, default=5000)
    parser.add_argument("--no-callgrind", action="store_true")
    parser.add_argument("--only", choices=("make", "record", "both"), help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.only:  # NOTE: a run under callgrind
        measure(args.calls, args.only)
        return 0
    took = {k: v * 1e6 for k, v in measure(args.calls).items()}
    record = took["make"] + took["write"]
    added = took["chained"] - took["write"]
    print(f"audit record   {record:8.1f} µs per call (made: {took['make']:.1f}, written as before "
          f"the chain: {took['write']:.1f})")  # fmt: skip
    print(f"chained write  {took['chained']:8.1f} µs per call (canonical JSON, SHA-256, head and "
          "ranks, checkpoints, the row)")  # fmt: skip
    print(f"chain adds     {added:8.1f} µs per call: {added / record:.2f}x the record's own "
          f"({args.calls} calls in batches of {BATCH})")  # fmt: skip
    if args.no_callgrind:
        return 0
    if shutil.which("valgrind") is None:
        print("no valgrind here: instruction counts not measured (install Debian's valgrind)")
        return 0
    small = max(BATCH, args.calls // 10)
    make, own, both = (_per_call(_instructions, p, small) for p in ("make", "record", "both"))
    chain_adds = (both - own) - (own - make)
    print(f"instructions   record {own / 1000:7.1f}k, chain adds {chain_adds / 1000:7.1f}k per "
          f"call: {chain_adds / own:.2f}x  (callgrind, {small} calls)")  # fmt: skip
    return 0


if __name__ == "__main__":
    sys.exit(main())
