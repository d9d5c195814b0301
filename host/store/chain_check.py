"""Checking an audit chain: every entry's hash, seq and prev, and the checkpoints' signatures.

:func:`check_chain` reads the entries in the order the store keeps them and stops at the first
that breaks the chain, naming what happened to it as best the neighbours tell:

* **edited**: an entry's text no longer has its hash; or its hash was recomputed, so the next
  entry's ``prev`` no longer matches it;
* **deleted**: a ``seq`` is missing (or the trail starts after seq 1 at an entry that is not a
  checkpoint: pruning only ever starts it at one);
* **inserted**: an entry whose successor links past it, or two entries that carry one ``seq``;
* **reordered**: an entry comes before one with a lower ``seq``.

A checkpoint's signature is checked with the public key given; without one, checkpoints are
counted, not checked. What no chain can show by itself: its newest entries deleted after the
last checkpoint (an export elsewhere shows it).
"""

from __future__ import annotations

import json
from collections import deque
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Any

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

from host.store.chain import GENESIS, canonical, digest
from host.store.signing import key_id, signature_holds

__all__ = ["ChainReport", "check_chain"]

#: How many entries ahead a check looks for one that was moved.
_LOOK_AHEAD = 1000


@dataclass
class ChainReport:
    """What a check found: the entries it walked, and the first problem (None: intact)."""

    count: int = 0
    first: int | None = None
    last: int | None = None
    problem: str | None = None
    checkpoints: int = 0
    signed: int = 0

    @property
    def intact(self) -> bool:
        """Whether no entry broke the chain."""
        return self.problem is None


@dataclass(frozen=True)
class _Entry:
    seq: int
    prev: str
    hash: str
    holds: bool  # its text has its hash
    kind: str
    fields: dict[str, Any]


def _entry(position: int, body: str, stored: str) -> _Entry:
    try:
        fields = json.loads(body)
        seq, prev = int(fields["seq"]), str(fields["prev"])
    except (ValueError, KeyError, TypeError):
        return _Entry(position, "", stored, False, "?", {})
    holds = digest(body) == stored
    return _Entry(seq, prev, stored, holds, str(fields.get("kind")), fields)


class _Ahead:
    """An iterator that can look ahead."""

    def __init__(self, items: Iterator[_Entry]) -> None:
        self._items = items
        self._buffer: deque[_Entry] = deque()

    def next(self) -> _Entry | None:
        if self._buffer:
            return self._buffer.popleft()
        return next(self._items, None)

    def peek(self, n: int) -> list[_Entry]:
        while len(self._buffer) < n:
            item = next(self._items, None)
            if item is None:
                break
            self._buffer.append(item)
        return list(self._buffer)[:n]


def check_chain(
    rows: Iterable[tuple[int, str, str]], public: Ed25519PublicKey | None = None
) -> ChainReport:
    """Check the entries ``rows`` (``(row seq, body, hash)``, in the store's order)."""
    report = ChainReport()
    ahead = _Ahead(_entry(seq, body, stored) for seq, body, stored in rows)
    last: _Entry | None = None
    while (entry := ahead.next()) is not None:
        problem = _start(entry) if last is None else _broken(last, entry, ahead)
        if problem is None and entry.kind == "checkpoint":
            problem = _signed(entry, public, report)
        if problem is not None:
            report.problem = problem
            return report
        report.count += 1
        report.first = entry.seq if report.first is None else report.first
        report.last = entry.seq
        last = entry
    return report


def _start(entry: _Entry) -> str | None:
    if not entry.holds:
        return f"seq {entry.seq} was edited: its text no longer has its hash"
    if entry.seq == 1:
        return None if entry.prev == GENESIS else "seq 1 was edited: it links to a record before it"
    if entry.kind == "checkpoint":
        return None  # NOTE: pruning keeps the chain from a checkpoint on
    return (
        f"records before seq {entry.seq} were deleted: the trail starts at seq {entry.seq}, "
        "which is not a checkpoint"
    )


def _broken(last: _Entry, entry: _Entry, ahead: _Ahead) -> str | None:
    """What is wrong with ``entry`` after ``last`` (which was sound), or None."""
    expected = last.seq + 1
    after = ahead.peek(1)
    if not entry.holds:
        if after and after[0].prev == last.hash:
            return f"a record was inserted after seq {last.seq} (it does not have its hash)"
        return f"seq {entry.seq} was edited: its text no longer has its hash"
    if entry.seq == expected and entry.prev == last.hash:
        return None
    if entry.seq > expected:
        if any(e.seq == expected for e in ahead.peek(_LOOK_AHEAD)):
            return f"records were reordered: seq {entry.seq} comes before seq {expected}"
        gap = str(expected) if entry.seq == expected + 1 else f"{expected} to {entry.seq - 1}"
        return f"seq {gap} deleted: the record after seq {last.seq} is seq {entry.seq}"
    if entry.seq == last.seq and entry.prev == last.prev:
        inserted = last if entry.hash == (after[0].prev if after else None) else entry
        return (
            f"a record was inserted at seq {entry.seq} (two records carry it; "
            f"the inserted one's id is {inserted.fields.get('id')!r})"
        )
    if entry.seq < expected:
        return f"records were reordered: seq {entry.seq} comes after seq {last.seq}"
    if after and after[0].prev == last.hash:
        return f"a record was inserted at seq {entry.seq}: seq {after[0].seq} links past it"
    return (
        f"seq {last.seq} was edited: its hash was recomputed, "
        f"and seq {entry.seq} no longer links to it"
    )


def _signed(entry: _Entry, public: Ed25519PublicKey | None, report: ChainReport) -> str | None:
    report.checkpoints += 1
    if public is None:
        return None
    unsigned = {k: v for k, v in entry.fields.items() if k != "signature"}
    signature = entry.fields.get("signature")
    if not isinstance(signature, str) or not signature_holds(
        public, canonical(unsigned), signature
    ):
        return (
            f"the checkpoint at seq {entry.seq} does not verify with the public key given "
            f"(key {key_id(public)}; it names key {entry.fields.get('key')})"
        )
    report.signed += 1
    return None
