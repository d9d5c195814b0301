"""Legacy sessions' places (host.protocol.legacy.places): evicting the least recently used, and
renewing a place at most once a minute per session per worker (on requests and while a GET stream
is open), on a real SQLite store."""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from types import SimpleNamespace

import pytest

from host.protocol import REVISIONS
from host.protocol.digests import principal_digest
from host.protocol.legacy import places as places_module
from host.protocol.legacy.listen import Listeners
from host.protocol.legacy.places import SessionPlaces
from host.protocol.legacy.sessions import LegacyOptions, Session, SessionSealer
from host.store import Store, open_store


class Clock:
    """A monotonic clock the test moves."""

    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def store(tmp_path: Path) -> Iterator[Store]:
    opened = open_store(f"sqlite:///{tmp_path / 'store.db'}")
    yield opened
    opened.close()


def count_renewals(store: Store, monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The members whose places ``store`` renews from now on, in order (the renewals still run)."""
    renewals: list[str] = []
    renew = store.renew_place

    def counting(group: str, member: str, *, ttl_s: float) -> bool:
        renewals.append(member)
        return renew(group, member, ttl_s=ttl_s)

    monkeypatch.setattr(store, "renew_place", counting)
    return renewals


def start(places: SessionPlaces, principal: str = "alice") -> Session:
    """A new session of ``principal``, its place taken (limited as an authenticated caller)."""
    sealer = SessionSealer(["k" * 32], 86_400)
    session, _ = sealer.start(REVISIONS["2025-11-25"], {}, {"name": "t"}, principal)
    places.take(session, limited=True)
    time.sleep(0.01)  # distinct expiries, so "least recently used" is well defined
    return session


def test_a_session_past_the_limit_evicts_the_least_recently_used(
    store: Store, caplog: pytest.LogCaptureFixture
) -> None:
    clock = Clock()
    places = SessionPlaces(store, LegacyOptions(sessions=3), clock=clock)
    first, second, third = (start(places) for _ in range(3))
    clock.now += 61  # first's turn to renew is due: the request renews its place
    assert places.holds(first)
    time.sleep(0.01)
    with caplog.at_level(logging.INFO, "host.protocol.legacy"):
        fourth = start(places)
    assert [places.holds(s) for s in (first, second, third, fourth)] == [True, False, True, True]
    evicted = [r for r in caplog.records if getattr(r, "event", "") == "session_evicted"]
    assert len(evicted) == 1
    line = evicted[0].__dict__
    assert line["principal"] == principal_digest("alice") and line["session"] == second.tag
    assert second.id not in caplog.text and "alice" not in caplog.text
    # another principal's sessions are its own
    assert places.holds(start(places, "bob")) and places.holds(third)


def test_a_place_is_renewed_at_most_once_a_minute_per_worker(
    store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    clock = Clock()
    places = SessionPlaces(store, LegacyOptions(sessions=3), clock=clock)
    renewals = count_renewals(store, monkeypatch)
    session = start(places)
    assert all(places.holds(session) for _ in range(50))
    assert renewals == []  # just taken: taking was its renewal
    clock.now += 59
    assert places.holds(session) and renewals == []
    clock.now += 2
    assert all(places.holds(session) for _ in range(50))
    assert renewals == [session.id]
    # a second worker keeps its own memo, and renews on its own turn
    other = SessionPlaces(store, LegacyOptions(sessions=3), clock=clock)
    assert other.holds(session) and renewals == [session.id] * 2
    places.give(session)
    clock.now += 61
    assert not places.holds(session) and not other.holds(session)


def test_an_open_get_stream_keeps_its_session_in_use(
    store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    clock = Clock()
    options = LegacyOptions(sessions=2, keepalive_s=0.0)
    places = SessionPlaces(store, options, clock=clock)
    listening, idle = start(places), start(places)
    renewals = count_renewals(store, monkeypatch)
    host = SimpleNamespace(generation="g1")
    stream = Listeners(host, store, options, places).open(
        listening, threading.Event(), lambda: False
    )
    assert stream.stream is not None
    events = iter(stream.stream)
    next(events)  # the stream's first event, at once
    clock.now += 61
    next(events)  # a keep-alive, a second later: the place was checked, and renewed
    stream.stream.close()
    assert renewals == [listening.id]
    time.sleep(0.01)
    start(places)
    assert places.holds(listening) and not places.holds(idle)


def test_the_renewal_memo_is_bounded(store: Store, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(places_module, "_MEMO_SIZE", 2)
    places = SessionPlaces(store, LegacyOptions(sessions=8), clock=Clock())
    sessions = [start(places) for _ in range(3)]
    renewals = count_renewals(store, monkeypatch)
    # the oldest was dropped from the memo: it is renewed early, the two remembered are not
    assert all(places.holds(s) for s in reversed(sessions))
    assert renewals == [sessions[0].id]
