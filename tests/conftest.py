"""Fixtures shared by the test files: the help desk in ``tmp_path``, real redis-servers, stores,
and real OAuth 2 authorization servers (``oauth_server``, ``other_oauth_server``,
``fresh_oauth_server``: see ``support/oauth.py``).

A test file that needs a different ``legacy`` client defines its own fixture of that name, which
takes precedence over the one here. (No ``mcp`` here: that name is the host pytest plugin's fixture,
which other test files use.)
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from host.store import Store, open_store
from support.helpdesk import use_tmp_data
from support.legacy import Legacy, legacy_client
from support.oauth import fresh_oauth_server, oauth_server, other_oauth_server  # noqa: F401
from support.redis import RedisServer, redis_exe, start_redis
from support.servers import stop

#: Fixtures that start a real process (redis-server, the OAuth mock): their tests are ``served``.
_PROCESS_FIXTURES = frozenset(
    {"redis_url", "redis_server", "oauth_server", "other_oauth_server", "fresh_oauth_server"}
)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Mark ``served`` the tests that start real processes through a fixture; run their files first.

    Modules that start servers themselves say so with ``pytestmark``; a store test is served
    when it runs on Redis (``store_url``'s ``redis`` case) or asks for its own redis-server.

    NOTE: ``.ci/run`` hands whole files to its workers in this order. The files that start
    processes take most of the time (the slowest a minute), so they go first and the quick
    in-process files fill the gaps at the end; in the other order a slow file started last set
    the length of the run. Each file's tests keep their order, next to each other.
    """
    for item in items:
        names = set(getattr(item, "fixturenames", ()))
        params = getattr(getattr(item, "callspec", None), "params", {})
        if names & _PROCESS_FIXTURES or params.get("store_url") == "redis":
            item.add_marker(pytest.mark.served)
    slow = {
        item.path
        for item in items
        if item.get_closest_marker("served") or item.get_closest_marker("browser")
    }
    items.sort(key=lambda item: item.path not in slow)  # stable: True (quick) after False


@pytest.fixture(autouse=True)
def _no_developer_data(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Every test's data folder (and so its help-desk database) is its own, never the checkout's.

    NOTE: without it, an in-process test read the developer's ``.host/helpdesk.db`` (which
    ``host serve`` of the examples writes), and failed once a ticket had been closed there.
    ``HELPDESK_DB`` stays unset: ``host test`` gives each example a data folder of its own, and
    one database named for them all would carry one example's changes into the next.
    """
    monkeypatch.setenv("HOST_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.delenv("HELPDESK_DB", raising=False)


@pytest.fixture
def db(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A fresh help-desk database in ``tmp_path``, the one the example handlers use."""
    return use_tmp_data(tmp_path, monkeypatch)


@pytest.fixture
def legacy(tmp_path: Path, db: Path) -> Legacy:
    """A raw legacy client (no session yet) of a fresh help-desk app on ``db``."""
    return legacy_client(tmp_path)


@pytest.fixture
def redis_server(tmp_path: Path) -> Iterator[Callable[..., RedisServer]]:
    """Start private redis-servers with given arguments; all are stopped after the test."""
    started: list[RedisServer] = []

    def start(*extra: str) -> RedisServer:
        folder = tmp_path / f"redis-{len(started)}"
        folder.mkdir()
        server = RedisServer(folder, *extra)
        started.append(server)
        return server

    yield start
    for server in started:
        server.stop()


@pytest.fixture(scope="session")
def redis_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """A ``redis://`` URL: $HOST_TEST_REDIS_URL, or a private redis-server started for the session.

    It keeps an append-only file, as a production Redis must (the host refuses one that can
    forget act claims). Fails (never skips) without redis-server, since CI must test Redis too.
    """
    given = os.environ.get("HOST_TEST_REDIS_URL")
    if given:
        yield given
        return
    folder = tmp_path_factory.mktemp("redis")
    proc, port = start_redis(redis_exe(), folder, "--appendonly", "yes")
    try:
        yield f"redis://127.0.0.1:{port}/0"
    finally:
        stop(proc, 5)


@pytest.fixture(params=["sqlite", "redis"])
def store_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """Each store test runs twice: on a fresh SQLite file, and on the session's redis-server."""
    if request.param == "redis":
        return str(request.getfixturevalue("redis_url"))
    return f"sqlite:///{tmp_path / 'store.db'}"


@pytest.fixture
def store(store_url: str) -> Iterator[Store]:
    """The store ``store_url`` names, closed after the test."""
    opened = open_store(store_url)
    yield opened
    opened.close()


@pytest.fixture
def key() -> str:
    """A key no other test uses, since one redis-server serves the whole session."""
    return f"test-{uuid.uuid4().hex}"
