"""Every act's audit record is in the store before the act starts (:mod:`host.protocol.acts`).

A later round's record goes in with its claim; a first round's is kept alone (on SQLite, in a file
of the worker's own that a live process writes into the store once the worker is dead). Each is the
record the act keeps if its worker dies, shown once its time has come (here at once: it is past).
"""

from __future__ import annotations

import logging
import os
import signal
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
from support.waiting import wait_until


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


def test_a_first_rounds_act_starts_with_its_record_kept_for_a_dead_worker(tmp_path: Path) -> None:
    # SQLite keeps it in a file of the process's own until the process is found dead: here, the
    # store is closed (its lock let go) and opened again, and the record is in the table.
    db = f"sqlite:///{tmp_path / 'store.db'}"
    first = open_store(db)
    seen: list[list[AuditRecord]] = []
    outcome = Acts(first, ttl_s=60).first("send", 5.0, _lost)(lambda: _act_seeing(first, seen))
    assert outcome.acted and seen == [[]]
    assert len(list(tmp_path.glob("store.db-acts-*.log"))) == 1
    first.close()

    again = open_store(db)
    try:
        [record] = again.audit_records(tool="send")
    finally:
        again.close()
    assert (record.id, record.outcome) == ("call-1", "incident") and record.incident
    assert list(tmp_path.glob("store.db-acts-*.log")) == []


def test_a_killed_workers_records_are_written_by_a_live_process(tmp_path: Path) -> None:
    db = f"sqlite:///{tmp_path / 'store.db'}"
    live = open_store(db)
    try:
        pid = os.fork()
        if pid == 0:  # the worker: keeps a record, then dies without a word
            child = open_store(db)
            record, keep_s = _lost("inc-child")
            child.act_starting(record, keep_s=keep_s)
            os.kill(os.getpid(), signal.SIGKILL)
        os.waitpid(pid, 0)
        assert live.audit_records(tool="send") == []
        assert wait_until(lambda: bool(live.audit_records(tool="send")), 10)
        [record] = live.audit_records(tool="send")
        assert record.incident == "inc-child"
    finally:
        live.close()


def test_a_live_workers_records_are_left_alone(tmp_path: Path) -> None:
    db = f"sqlite:///{tmp_path / 'store.db'}"
    worker, other = open_store(db), open_store(db)
    try:
        record, keep_s = _lost("inc-live")
        worker.act_starting(record, keep_s=keep_s)
        time.sleep(1.5)  # the other store's sweep looks once a second
        assert other.audit_records(tool="send") == []
    finally:
        worker.close()
        other.close()


def test_a_claimed_act_starts_with_its_record_written_by_the_claim(store: Store) -> None:
    seen: list[list[AuditRecord]] = []
    once = Acts(store, ttl_s=60).guard("n1", "send", 5.0, _lost)
    assert once(lambda: _act_seeing(store, seen)).acted
    [[record]] = seen
    assert record.outcome == "incident" and record.incident
    assert store.act_state("act:n1") is not None


def test_a_first_rounds_act_never_runs_when_its_record_cannot_be_written(
    store: Store, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    def refuse(*args: object, **kwargs: object) -> bool:
        raise StoreError("the store is locked")

    monkeypatch.setattr(store, "act_starting", refuse)
    ran: list[bool] = []
    with caplog.at_level(logging.ERROR, "host.protocol.acts"), pytest.raises(StoreError):
        Acts(store, ttl_s=60).first("send", 5.0, _lost)(
            lambda: (ran.append(True), Outcome.from_value("sent", acted=True))[1]
        )
    assert ran == []
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


def test_a_long_journal_is_replayed_in_chunks_all_of_it(tmp_path: Path) -> None:
    db = f"sqlite:///{tmp_path / 'store.db'}"
    pid = os.fork()
    if pid == 0:  # a worker that kept 1,200 records and died
        child = open_store(db)
        for n in range(1200):
            record = AuditRecord(f"call-{n}", time.time() - 1, "alice", "bulk", "incident")
            child.act_starting(record, keep_s=3600)
        os.kill(os.getpid(), signal.SIGKILL)
    os.waitpid(pid, 0)
    store = open_store(db)  # its opening sweep writes them
    try:
        assert len(store.audit_records(tool="bulk", limit=5000)) == 1200
    finally:
        store.close()
