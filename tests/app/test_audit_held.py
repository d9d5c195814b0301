"""Records the store refuses are held, in order, bounded, and written once it takes writes again.

The store here refuses every write for a while (as a full disk does); the writer holds what it
could not write, drops (counting and logging each call's id) what goes past its bound, and once
the store takes writes writes the held records first, in the order their calls ended.
"""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from host.errors import StoreError
from host.observers.audit import AuditObserver
from host.observers.metrics import MetricsObserver
from host.protocol import Round
from host.store import open_store
from support.waiting import wait_until


def test_held_records_are_written_in_order_and_those_past_the_bound_counted(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    store = open_store(f"sqlite:///{tmp_path / 'store.db'}")
    refusing = True
    write = store.write_audits

    def full_disk(*args: object, **kwargs: object) -> None:
        if refusing:
            raise StoreError("database or disk is full")
        write(*args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(store, "write_audits", full_disk)
    monkeypatch.delenv("PROMETHEUS_MULTIPROC_DIR", raising=False)
    observer = AuditObserver(store, 3600, held_max=5, retry_s=0.05)
    metrics = MetricsObserver()
    metrics.watch_audit(observer)
    tell = observer.held.changed
    assert tell is not None
    seen: list[tuple[int, int]] = []

    def changed(held: int, dropped: int) -> None:
        seen.append((held, dropped))
        tell(held, dropped)

    observer.held.changed = changed
    try:
        for n in range(7):
            observer.round_ended(
                Round("t", 1, f"p{n}", time.monotonic(), nonce=f"n-{n}", ends=True)
            )
            assert observer.flush()
        assert (len(observer.held), observer.held.dropped) == (5, 2)
        dropped = [r for r in caplog.records if getattr(r, "event", None) == "audit_dropped"]
        assert len(dropped) == 2 and all(getattr(r, "call", None) for r in dropped)
        shown = metrics.exposition()[0].decode()
        for line in (
            "host_audit_held 5.0",
            "host_audit_held_max 5.0",
            "host_audit_dropped_total 2.0",
        ):
            assert line in shown, shown

        refusing = False
        assert wait_until(lambda: len(store.audit_records()) == 5, 10)
        records = sorted(store.audit_records(), key=lambda r: r.seq or 0)
    finally:
        store.close()
    assert [r.principal for r in records] == [f"p{n}" for n in range(5)]  # in order
    assert seen[-1] == (0, 2)  # what /metrics shows: none held now, two dropped
