"""The pages' sessions in the store, on both backends: kept, found by the cookie's id, ended,
and no longer than the token they began with.

Redis is a real redis-server (the ``redis_url`` fixture); SQLite a file in the test's folder.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import falcon
import falcon.testing
import pytest

from host.auth import Identity
from host.pages.session import SESSION_COOKIE, SESSION_S, Sessions
from host.store import Store, open_store
from host.store.sessions import PageSession, session_key
from support.waiting import wait_until

pytestmark = pytest.mark.served


@pytest.fixture(params=["sqlite", "redis"])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Store]:
    if request.param == "sqlite":
        opened = open_store(f"sqlite:///{tmp_path / 'store.db'}")
    else:
        url = request.getfixturevalue("redis_url")
        opened = open_store(url)
        opened.backend.client.raw.flushdb()  # type: ignore[attr-defined]
    yield opened
    opened.close()


def _session(sid: str, principal: str, lasts_s: float = 60.0) -> PageSession:
    now = time.time()
    return PageSession(
        session_key(sid), principal, "static", ("ops:approve",), "ab" * 32, now, now + lasts_s
    )


def test_a_session_is_found_by_its_cookie_id_and_kept_under_a_digest(store: Store) -> None:
    store.sessions.open(_session("id-one", "bob"))
    found = store.sessions.get("id-one")
    assert found is not None and found.principal == "bob" and found.scopes == ("ops:approve",)
    assert found.key != "id-one" and store.sessions.get(found.key) is None  # the key opens nothing
    assert store.sessions.get("id-two") is None
    assert "ab" * 32 not in str(found.describe())  # the proof is never shown


def test_ending_a_session_ends_it_for_every_reader(store: Store) -> None:
    store.sessions.open(_session("id-one", "bob"))
    assert store.sessions.end("id-one")
    assert store.sessions.get("id-one") is None
    assert not store.sessions.end("id-one")  # already gone


def test_a_session_expires_at_its_time(store: Store) -> None:
    store.sessions.open(_session("short", "bob", lasts_s=0.3))
    store.sessions.open(_session("long", "bob"))
    assert store.sessions.get("short") is not None
    assert wait_until(lambda: store.sessions.get("short") is None, 5, 0.05)
    assert [s.key for s in store.sessions.listed("bob")] == [session_key("long")]


def test_revoke_by_principal_by_key_and_all(store: Store) -> None:
    for sid, who in [("b1", "bob"), ("b2", "bob"), ("c1", "carol"), ("d1", "dave")]:
        store.sessions.open(_session(sid, who))
    assert {s.principal for s in store.sessions.listed()} == {"bob", "carol", "dave"}
    assert store.sessions.revoke(principal="bob") == 2
    assert store.sessions.get("b1") is None and store.sessions.get("c1") is not None
    assert store.sessions.revoke(session_key("c1")) == 1
    assert store.sessions.revoke(session_key("c1")) == 0
    assert store.sessions.revoke() == 1  # everyone's: dave's
    assert store.sessions.listed() == []


def _request_with(cookie: str) -> falcon.Request:
    return falcon.testing.create_req(headers={"Cookie": f"{SESSION_COOKIE}={cookie}"})


def test_a_session_lasts_no_longer_than_the_access_token_it_began_with(store: Store) -> None:
    sessions = Sessions(["k" * 32], secure=False, book=store.sessions)
    resp = falcon.Response()
    soon = time.time() + 0.5
    token = "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJib2IifQ.sig"
    bob = Identity("bob", frozenset({"ops:approve"}), {"exp": soon}, "jwt", proof=token)
    sessions.begin(falcon.testing.create_req(), resp, bob)
    cookie = resp._cookies[SESSION_COOKIE]
    assert cookie["max-age"] == 1  # the cookie too: not the 8 hours of a static token's
    assert token not in cookie.value
    (kept,) = store.sessions.listed("bob")
    assert kept.expires == soon and token not in kept.proof  # sealed in the store
    session = sessions.read(_request_with(cookie.value))
    assert session is not None and session.proof == token and session.method == "jwt"
    assert wait_until(lambda: sessions.read(_request_with(cookie.value)) is None, 5, 0.05)


def test_a_static_token_session_lasts_eight_hours_at_most(store: Store) -> None:
    sessions = Sessions(["k" * 32], secure=False, book=store.sessions)
    resp = falcon.Response()
    carol = Identity("carol", frozenset(), method="static", proof="ab" * 32)
    sessions.begin(falcon.testing.create_req(), resp, carol)
    assert resp._cookies[SESSION_COOKIE]["max-age"] == SESSION_S == 8 * 3600
    (kept,) = store.sessions.listed("carol")
    assert SESSION_S - 5 < kept.expires - time.time() <= SESSION_S
    forged = Sessions(["another-key" * 3], secure=False, book=store.sessions)
    assert forged.read(_request_with(resp._cookies[SESSION_COOKIE].value)) is None
