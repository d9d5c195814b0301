"""``/readyz`` fails while the store cannot take a write, and ``/healthz`` stays up.

Real ``host serve`` with two workers: on the SQLite store, another process holds its write lock
(as a stuck writer would; it works even as root, whom file modes do not stop); on Redis, the
server refuses writes (``min-replicas-to-write``) while it still answers reads. Both recover as
soon as the store takes writes again.
"""

from __future__ import annotations

import http.client
import json
import sqlite3
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
import redis

from support.modern import call
from support.servers import Server, host_serve
from support.workers import connections_on_two_workers

pytestmark = pytest.mark.served


def probe(conn: http.client.HTTPConnection, path: str) -> tuple[int, dict[str, Any]]:
    conn.request("GET", path)
    response = conn.getresponse()
    return response.status, json.loads(response.read())


def assert_probes(server: Server, ready: bool, reason: str = "") -> None:
    """Both workers' probes, asked at once: a probe may wait for the store's lock a while, and
    the other worker's kept-alive connection must not sit idle past its keep-alive meanwhile."""

    def check(conn: http.client.HTTPConnection) -> None:
        status, body = probe(conn, "/readyz")
        if ready:
            assert (status, body) == (200, {"status": "ready", "tools": 6})
        else:
            assert status == 503, body
            assert body["status"] == "unavailable"
            assert reason in body["reason"]
        assert probe(conn, "/healthz") == (200, {"status": "ok"})

    with ThreadPoolExecutor(max_workers=2) as pool:
        list(pool.map(check, connections_on_two_workers(server, "service_status")))


@contextmanager
def write_locked(path: Path) -> Iterator[None]:
    holder = sqlite3.connect(path, isolation_level=None, timeout=5)
    try:
        holder.execute("BEGIN EXCLUSIVE")
        yield
    finally:
        holder.execute("ROLLBACK")
        holder.close()


def test_readiness_follows_a_sqlite_store_that_cannot_be_written(tmp_path: Path) -> None:
    with host_serve(tmp_path, "host", "--workers", "2") as server:
        assert_probes(server, ready=True)
        with write_locked(tmp_path / "host" / "store.db"):
            assert_probes(server, ready=False, reason="database is locked")
            _, body = probe(server.connect(), "/readyz")
            assert "SQLite store" in body["reason"]
        assert_probes(server, ready=True)
        lines = server.log_lines("not_ready")
        assert lines and "database is locked" in lines[0]["reason"]


def test_readiness_follows_a_redis_store_that_refuses_writes(
    tmp_path: Path, redis_url: str
) -> None:
    admin = redis.Redis.from_url(redis_url)
    with host_serve(tmp_path, "host", "--workers", "2", HOST_STORE=redis_url) as server:
        assert_probes(server, ready=True)
        admin.config_set("min-replicas-to-write", 1)
        try:
            assert_probes(server, ready=False, reason="NOREPLICAS")
            # Reads still work: the store answers, it only cannot take writes.
            assert admin.ping()
        finally:
            admin.config_set("min-replicas-to-write", 0)
        assert_probes(server, ready=True)
        assert call(server.connect(), "list_outbox", {})["structuredContent"] == {"emails": []}
