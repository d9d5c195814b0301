"""Every act's audit record is in the store before the act starts (:mod:`host.protocol.acts`).

A later round's record goes in with its claim, a first round's alone; each is the record the act
keeps if its worker dies, shown once its time has come (here: at once, its time already past).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from host.errors import StoreError
from host.machine import Outcome
from host.protocol.acts import Acts
from host.store import Store, open_store
from host.store.records import AuditRecord
from host.store.shared import Started


@pytest.fixture
def store(tmp_path: Path) -> Iterator[Store]:
    opened = open_store(f"sqlite:///{tmp_path / 'store.db'}")
    yield opened
    opened.close()


def _lost(incident: str) -> Started:
    record = AuditRecord("call-1", time.time() - 1, "alice", "send", "incident", incident=incident)
    return record, 3600.0


def _act_seeing(store: Store, seen: list[list[AuditRecord]]) -> Outcome:
    seen.append(store.audit_records(tool="send"))
    return Outcome.from_value("sent", acted=True)


def test_a_first_rounds_act_starts_with_its_record_in_the_store(store: Store) -> None:
    seen: list[list[AuditRecord]] = []
    outcome = Acts(store, ttl_s=60).first("send", 5.0, _lost)(lambda: _act_seeing(store, seen))
    assert outcome.acted
    [[record]] = seen
    assert (record.id, record.outcome) == ("call-1", "incident") and record.incident


def test_a_claimed_act_starts_with_its_record_written_by_the_claim(store: Store) -> None:
    seen: list[list[AuditRecord]] = []
    once = Acts(store, ttl_s=60).guard("n1", "send", 5.0, _lost)
    assert once(lambda: _act_seeing(store, seen)).acted
    [[record]] = seen
    assert record.outcome == "incident" and record.incident
    assert store.act_state("act:n1") is not None


def test_a_first_rounds_act_runs_when_its_record_cannot_be_written(
    store: Store, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    def refuse(*args: object, **kwargs: object) -> bool:
        raise StoreError("the store is locked")

    monkeypatch.setattr(store, "write_audit", refuse)
    with caplog.at_level(logging.ERROR, "host.protocol.acts"):
        outcome = Acts(store, ttl_s=60).first("send", 5.0, _lost)(
            lambda: Outcome.from_value("sent", acted=True)
        )
    assert outcome.acted and not outcome.is_error
    [line] = [r for r in caplog.records if getattr(r, "event", None) == "act_record_unwritten"]
    assert (line.tool, line.reason) == ("send", "the store is locked")  # type: ignore[attr-defined]


def test_a_claimed_act_never_runs_when_its_claim_and_record_cannot_be_written(
    store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    def refuse(*args: object, **kwargs: object) -> None:
        raise StoreError("the store is locked")

    monkeypatch.setattr(store, "claim_act", refuse)
    ran: list[bool] = []
    once = Acts(store, ttl_s=60).guard("n2", "send", 5.0, _lost)
    with pytest.raises(StoreError):
        once(lambda: (ran.append(True), Outcome.from_value("sent", acted=True))[1])
    assert ran == []
