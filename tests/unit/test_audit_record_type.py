"""An audit record sets its fields at once (not one ``object.__setattr__`` each), and is still
the frozen dataclass it was: the same fields and defaults, equality, ``replace``."""

from __future__ import annotations

import dataclasses

import pytest

from host.store.records import AuditRecord


def test_an_audit_record_is_the_frozen_dataclass_it_was() -> None:
    record = AuditRecord("c1", 1.5, "alice", "t", "acted")
    assert dataclasses.asdict(record) == {
        "id": "c1", "time": 1.5, "principal": "alice", "tool": "t", "outcome": "acted",
        "arguments": {}, "answers": {}, "approvals": (), "acted": False, "incident": None,
        "duration_s": 0.0, "code": None, "note": None, "kind": "call", "detail": {},
        "seq": None, "prev": None, "hash": None,
    }  # fmt: skip
    assert record.arguments is not AuditRecord("c2", 1.5, "a", "t", "x").arguments
    with pytest.raises(dataclasses.FrozenInstanceError):
        record.outcome = "error"  # type: ignore[misc]
    written = dataclasses.replace(record, seq=3, prev="0" * 64, hash="ab", arguments={"x": 1})
    assert (written.seq, written.arguments, written.id) == (3, {"x": 1}, "c1")
    assert written != record  # arguments differ
    assert dataclasses.replace(written, arguments={}) == record  # seq, prev, hash: not compared
    assert repr(record).startswith("AuditRecord(id='c1', time=1.5, principal='alice'")
    assert [f.name for f in dataclasses.fields(AuditRecord)][-3:] == ["seq", "prev", "hash"]
