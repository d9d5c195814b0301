"""Limits per caller, in one process: the settings, the slots, the pool's share, unstarted acts.

Issue 21: a principal's hanging acts filled the handler pool, and acts queued behind them were
reported "still running" and ran 100 s after their callers were answered.
"""

from __future__ import annotations

import json
import threading
import time
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from host.errors import ProtocolError, SettingsError
from host.limits import CALLER, LIMIT_EXCEEDED, LimitSettings, Slots
from host.machine import Outcome
from host.machine.timing import Runner
from host.observers.audit import AuditObserver, audit_record
from host.protocol import acts as acts_module
from host.protocol.acts import Acts
from host.protocol.events import Round
from host.settings import Settings
from host.store import open_store
from host.store.bounded import BOUNDED, PREFIX_BYTES, bounded


def test_the_limits_have_defaults_and_read_their_settings() -> None:
    assert Settings.from_env({}).limits == LimitSettings(64, 64, 2, 16384)
    env = {
        "HOST_LIMIT_CALLS_IN_FLIGHT": "5",
        "HOST_LIMIT_HANDLER_THREADS": "3",
        "HOST_LIMIT_STREAMS_PER_SESSION": "1",
        "HOST_RECORD_MAX": "100",
    }
    assert Settings.from_env(env).limits == LimitSettings(5, 3, 1, 100)


@pytest.mark.parametrize("raw", ["0", "-1", "x", "1.5"])
def test_a_limit_must_be_a_whole_number_from_one(raw: str) -> None:
    with pytest.raises(SettingsError, match="HOST_LIMIT_CALLS_IN_FLIGHT"):
        Settings.from_env({"HOST_LIMIT_CALLS_IN_FLIGHT": raw})


def test_slots_stop_at_their_most_and_forget_keys_at_zero() -> None:
    slots = Slots(2)
    assert slots.take("a") and slots.take("a")
    assert not slots.take("a")
    assert slots.take("b")
    slots.give("a")
    assert slots.take("a")
    slots.give("a")
    slots.give("a")
    assert slots.held("a") == 0
    assert "a" not in slots._held


def test_one_principal_holds_at_most_its_share_of_the_pool() -> None:
    runner = Runner(8)
    runner.limit_callers(2)
    release = threading.Event()
    token = CALLER.set("mallory")
    try:
        held = [runner.submit(release.wait) for _ in range(2)]
        with pytest.raises(ProtocolError) as refused:
            runner.submit(release.wait)
    finally:
        CALLER.reset(token)
    assert refused.value.http_status == 429
    assert refused.value.code == LIMIT_EXCEEDED
    assert refused.value.data["limit"] == "handler_threads"
    # another principal, and an anonymous caller, still get threads
    token = CALLER.set("alice")
    try:
        assert runner.submit(lambda: 1).result(1) == 1
    finally:
        CALLER.reset(token)
    assert runner.submit(lambda: 2).result(1) == 2
    release.set()
    for future in held:
        future.result(1)
    # the share comes back once the handlers return, not before
    token = CALLER.set("mallory")
    try:
        time.sleep(0.05)
        assert runner.submit(lambda: 3).result(1) == 3
    finally:
        CALLER.reset(token)


@pytest.fixture
def busy(monkeypatch: pytest.MonkeyPatch) -> threading.Event:
    """A one-thread pool for acts, its thread held until the event is set."""
    runner = Runner(1)
    monkeypatch.setattr(acts_module, "RUNNER", runner)
    release = threading.Event()
    runner.submit(release.wait)
    yield release
    release.set()


def test_a_first_rounds_act_that_never_started_never_starts(busy: threading.Event) -> None:
    ran = threading.Event()
    once = Acts.first_round("close_ticket", 0.2)
    outcome = once(lambda: (ran.set(), Outcome.from_value("done", acted=True))[1])
    assert outcome.is_error and not outcome.acted
    assert "did not run" in outcome.content[0]["text"]
    busy.set()
    assert not ran.wait(0.5)


def test_a_claimed_act_that_never_started_is_recorded_as_not_run(
    busy: threading.Event, tmp_path: Path
) -> None:
    store = open_store(f"sqlite:///{tmp_path / 'store.db'}")
    try:
        acts = Acts(store, ttl_s=60)
        ran = threading.Event()
        once = acts.guard("n1", "close_ticket", 0.2, lambda incident: None)
        outcome = once(lambda: (ran.set(), Outcome.from_value("done", acted=True))[1])
        assert outcome.is_error and not outcome.acted
        busy.set()
        assert not ran.wait(0.5)
        again = acts.recorded("n1", "close_ticket")
        assert again is not None and "did not run" in again.content[0]["text"]
    finally:
        store.close()


def test_a_large_value_is_kept_as_digest_size_and_prefix() -> None:
    small = {"text": "x" * 100}
    assert bounded(small, 16384) is small
    large = {"text": "é" * 600_000}
    kept = bounded(large, 16384)[BOUNDED]
    data = json.dumps(large, ensure_ascii=False, separators=(",", ":")).encode()
    assert kept["bytes"] == len(data)
    assert len(kept["sha256"]) == 64
    assert len(kept["prefix"].encode()) <= PREFIX_BYTES
    assert data.decode().startswith(kept["prefix"])


_SCALARS = st.none() | st.booleans() | st.floats(allow_nan=False) | st.integers(-(10**309), 10**309)


@settings(max_examples=400, deadline=None)
@given(
    value=st.dictionaries(st.text(max_size=12), _SCALARS | st.text(max_size=40), max_size=8),
    most=st.integers(0, 600),
)
def test_a_value_is_kept_whole_exactly_when_its_json_fits(
    value: dict[str, object], most: int
) -> None:
    """The shortcut that skips encoding small values never keeps one whose JSON is too large."""
    size = len(json.dumps(value, ensure_ascii=False, separators=(",", ":")).encode())

    kept = bounded(value, most)

    assert (kept is value) == (size <= most)


def test_an_audit_record_keeps_large_arguments_and_answer_contents_bounded() -> None:
    event = Round("ping", 0, "alice", 0.0, ends=True, nonce="n1")
    event.arguments = {"text": "x" * 20_000, "n": 1}
    event.call_answers = {"note": {"action": "accept", "content": {"note": "y" * 20_000}}}
    record = audit_record(event, 1.0, 16384)
    assert set(record.arguments) == {BOUNDED}
    assert record.answers["note"]["action"] == "accept"
    assert set(record.answers["note"]["content"]) == {BOUNDED}
    small = audit_record(event, 1.0, 100_000)
    assert small.arguments == event.arguments


def test_the_record_written_before_an_act_is_bounded_too(tmp_path: Path) -> None:
    # The durable record of a claimed act, written before it starts, keeps large values bounded
    # by the host's setting like the call's own record (a 1 MB argument is not kept whole).
    store = open_store(f"sqlite:///{tmp_path / 'store.db'}")
    try:
        observer = AuditObserver(store, 3600.0, record_max=1000)
        event = Round("ping", 0, "alice", 0.0, ends=True, nonce="n1")
        event.arguments = {"text": "x" * 5000}
        # NOTE: shown at once: its time is already past
        store.claim_act("act:n1", ttl_s=60, incident="i1", audit=observer.lost_record(event, -10.0))
        (record,) = store.audit_records(limit=10)
        assert set(record.arguments) == {BOUNDED}
    finally:
        store.close()


def test_the_session_limits_have_defaults_and_read_their_settings() -> None:
    limits = Settings.from_env({}).limits
    assert (limits.sessions, limits.questions_per_session) == (64, 16)
    env = {"HOST_LIMIT_SESSIONS": "7", "HOST_LIMIT_QUESTIONS_PER_SESSION": "3"}
    settings = Settings.from_env(env)
    assert (settings.limits.sessions, settings.limits.questions_per_session) == (7, 3)
    legacy = settings.legacy()
    assert (legacy.sessions, legacy.questions_per_session) == (7, 3)
    with pytest.raises(SettingsError, match="HOST_LIMIT_SESSIONS"):
        Settings.from_env({"HOST_LIMIT_SESSIONS": "0"})
