"""``host audit`` with what a hostile caller put in the trail, and a writer that loses nothing.

A principal with a newline and ANSI escapes printed a forged second record; U+202E in the
arguments showed them reversed; ``NaN`` made ``--format json`` print invalid JSON; one record the
store could not take lost the whole batch of other callers' records.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest

from host.cli import main
from host.observers.audit import AuditObserver
from host.protocol.events import Round
from host.store import Store, open_store
from host.store.records import ACTED, AuditRecord

FORGED = "mallory\x1b[1A\n2026-01-01T00:00:00Z  alice  delete_ticket  acted  1ms  {}"
HOSTILE = "\x1b[2J\x1b[31mroot\x1b[0m\u202etxt.exe\u2066\u2069\u200b\x7f\x85\u2028"


@pytest.fixture
def data(tmp_path: Path) -> Iterator[Store]:
    store = open_store(f"sqlite:///{tmp_path / 'data' / 'store.db'}")
    yield store
    store.close()


def audit(capsys: pytest.CaptureFixture[str], tmp_path: Path, *argv: str) -> str:
    assert main(["audit", *argv, "--data-dir", str(tmp_path / "data")]) == 0
    out: str = capsys.readouterr().out
    return out


def strict(text: str) -> Any:
    def refuse(constant: str) -> None:
        raise ValueError(f"{constant} is not JSON")

    return json.loads(text, parse_constant=refuse)


def hostile(store: Store) -> None:
    record = AuditRecord(
        "c1", time.time(), FORGED, "close_ticket", "acted",
        arguments={"id": HOSTILE, "n": float("nan"), "big": float("inf")},
        answers={"close": {"action": "accept", "content": {"note": "\u202eok"}}},
        approvals=({"question": "close\n  approvals: forged", "via": "asked"},),
        acted=True, duration_s=0.001,
    )  # fmt: skip
    store.write_audit(record, rank=ACTED, keep_s=9e6)


def test_text_output_is_one_line_per_record_with_escapes_visible(
    data: Store, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    hostile(data)
    out = audit(capsys, tmp_path)
    [line] = out.splitlines()  # one record, one line: no forged second one
    assert line.isprintable()
    assert "mallory\\x1b[1A\\n2026-01-01T00:00:00Z  alice" in line
    for escape in ("\\u001b[2J", "\\u202etxt.exe", "\\u2066", "\\u2069", "\\u200b", "\\x7f"):
        assert escape in line
    assert "close\\n  approvals: forged (asked)" in line


def test_json_output_is_valid_json_and_escapes_what_terminals_act_on(
    data: Store, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    hostile(data)
    out = audit(capsys, tmp_path, "--format", "json")
    assert out.isascii() or all(c.isprintable() or c == "\n" for c in out)
    [record] = strict(out)
    assert record["principal"] == FORGED
    assert record["arguments"]["id"] == HOSTILE
    assert record["arguments"]["n"] == "nan" and record["arguments"]["big"] == "inf"
    assert "\\u202e" in out and "\u202e" not in out


def ended(principal: str, nonce: str, **extra: Any) -> Round:
    return Round("probe", 1, principal, time.monotonic(), nonce=nonce, ends=True, **extra)


class Refusing:
    """A store that refuses any write holding ``bad``'s record, batch or not."""

    def __init__(self, store: Store) -> None:
        self.store = store
        self.batches: list[int] = []

    def write_audits(self, records: Sequence[tuple[AuditRecord, int]], *, keep_s: float) -> None:
        self.batches.append(len(records))
        if any(record.principal == "bad" for record, _ in records):
            raise ValueError("cannot encode this record")
        self.store.write_audits(records, keep_s=keep_s)

    def prune_audit(self, before: float) -> int:
        return self.store.prune_audit(before)


def test_one_record_the_store_refuses_does_not_lose_the_batch(data: Store) -> None:
    refusing = Refusing(data)
    observer = AuditObserver(refusing, 3600, window_s=0.5)  # type: ignore[arg-type]
    for n, who in enumerate(["ann", "bob", "bad", "cy"]):
        observer.round_ended(ended(who, f"n-{n}"))
    assert observer.flush()
    assert refusing.batches[0] == 4  # one batch, then one by one
    assert sorted(r.principal for r in data.audit_records()) == ["ann", "bob", "cy"]


def test_a_lone_surrogate_or_nan_in_arguments_is_written_not_dropped(data: Store) -> None:
    observer = AuditObserver(data, 3600, window_s=0.5)
    observer.round_ended(ended("ann", "n-1", arguments={"x": "a\ud800b", "y": float("nan")}))
    observer.round_ended(ended("bob", "n-2", arguments={"x": "fine"}))
    assert observer.flush()
    records = {r.principal: r for r in data.audit_records()}
    assert set(records) == {"ann", "bob"}
    assert records["ann"].arguments == {"x": "a\ufffdb", "y": "nan"}
