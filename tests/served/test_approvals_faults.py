"""Approvals when the store refuses, as the failing machine: a full disk under SQLite (a 4 MiB
tmpfs of the host's own) and a SIGSTOPped redis-server.

Every approvals route (the inbox, the API, ``host approvals ...``) answers 503 with
``Retry-After`` (the command line exits 3 with a message), never 500; a decision is recorded at
most once, and the approver's retry once the store is back is acknowledged, never a 409.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from host.store import open_store
from support.approvals import SECRET, SPECS, Site, make_tokens, unique
from support.inbox_http import Browser, csrf
from support.redis import RedisServer
from support.servers import Server, clean_env, host_serve

pytestmark = pytest.mark.served


def _cli(server: Server, token: str, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "host", "approvals", *args, "--url", server.url, "--token", token],
        capture_output=True, text=True, env=clean_env(), timeout=60,
    )  # fmt: skip


def _refused_everywhere(site: Site, request_id: str, *, reads: bool) -> None:
    """Every approvals route answers 503 with Retry-After, and the command line exits 3.

    ``reads``: whether reading is refused too (a stopped Redis), or only writing (a full disk).
    The routes are tried at once: each waits for the store's timeout.
    """
    server, token = site.servers[0], site.tokens["bob"]
    routes = [("POST", f"/{request_id}/approve", {"reason": "r" * 60000})]
    # NOTE: a long reason, so the decision needs new pages of a full disk's store.
    commands = [("approve", request_id, "--reason", "r" * 60000)]
    if reads:
        routes += [("GET", "?status=pending", None), ("GET", f"/{request_id}", None)]
        commands += [("pending",)]

    def api(method: str, path: str, body: object) -> tuple[int, str | None]:
        conn = server.connect()
        headers = {"Authorization": f"Bearer {token}", "Content-Type": "application/json"}
        conn.request(method, "/approvals/api/requests" + path,
                     None if body is None else json.dumps(body), headers)  # fmt: skip
        response = conn.getresponse()
        response.read()
        return response.status, response.getheader("Retry-After")

    with ThreadPoolExecutor(8) as pool:
        answers = list(pool.map(lambda route: api(*route), routes))
        done = list(pool.map(lambda args: _cli(server, token, *args), commands))
    assert answers == [(503, "5")] * len(routes), answers
    for finished in done:
        assert finished.returncode == 3, finished
        assert "cannot use its store now (503)" in finished.stderr
        assert "Traceback" not in finished.stderr


def _acknowledged_once(site: Site, request_id: str, store_url: str) -> None:
    """Once the store is back, bob's retry is acknowledged and his decision is kept once."""
    status, body = site.api("bob", "POST", f"/{request_id}/approve", {"reason": "ok"})
    assert status == 200, body
    assert body["approved_by"] == ["bob"], body
    store = open_store(store_url)
    try:
        request = store.request(request_id)
        assert request is not None
        assert [d.principal for d in request.decisions] == ["bob"]
    finally:
        store.close()
    log = site.servers[0].log.read_text()
    assert "Traceback" not in log and " 500 " not in log


@pytest.fixture
def on_a_small_disk(tmp_path: Path) -> Iterator[tuple[Site, Path]]:
    """Two workers on SQLite, the data folder on a 4 MiB tmpfs of its own."""
    disk = tmp_path / "disk"
    disk.mkdir()
    mounted = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "size=4m", "tmpfs", str(disk)], capture_output=True
    )
    if mounted.returncode != 0:
        pytest.skip("needs to mount a tmpfs (root)")
    path, tokens = make_tokens(tmp_path)
    try:
        with host_serve(
            tmp_path, "host", "--workers", "2", specs=SPECS, HOST_DATA_DIR=str(disk),
            HOST_AUTH_TOKENS=str(path), OPS_ACTS=str(tmp_path / "acts.jsonl"),
        ) as server:  # fmt: skip
            yield Site([server], tokens, tmp_path / "acts.jsonl"), disk
    finally:
        subprocess.run(["umount", "-l", str(disk)], check=False)


def test_a_full_disk_is_503_on_every_approvals_route_and_a_retry_is_acknowledged(
    on_a_small_disk: tuple[Site, Path],
) -> None:
    site, disk = on_a_small_disk
    service = unique("db")
    pending = site.call("alice", "delete_database", service)["_meta"]["host/approval"]
    inbox = Browser(site.servers[0], site.tokens["bob"])
    page = inbox.request("GET", f"/approvals/requests/{pending['request']}")
    assert page[0] == 200
    filler = disk / "filler"
    with filler.open("wb", buffering=0) as f:
        try:
            while True:
                f.write(b"x" * 65536)
        except OSError:
            pass  # full
    try:
        status, headers, _ = inbox.request(
            "POST", f"/approvals/requests/{pending['request']}",
            {"verdict": "approve", "reason": "r" * 60000, "csrf": csrf(page[2])},
        )  # fmt: skip
        assert status == 503 and headers["retry-after"] == "5"
        _refused_everywhere(site, pending["request"], reads=False)
        # A full disk still lets people read: the inbox and the API show the request.
        assert inbox.request("GET", f"/approvals/requests/{pending['request']}")[0] == 200
    finally:
        filler.unlink()
    _acknowledged_once(site, pending["request"], f"sqlite:///{disk / 'store.db'}")


def test_a_stopped_redis_is_503_on_every_approvals_route_and_a_retry_is_acknowledged(
    tmp_path: Path, redis_server: Callable[..., RedisServer]
) -> None:
    redis = redis_server("--appendonly", "yes", "--appendfsync", "always")
    store_url = redis.url + "?socket_timeout=0.5"  # NOTE: the default 5 s, shortened
    path, tokens = make_tokens(tmp_path)
    with host_serve(
        tmp_path, "host", "--workers", "1", specs=SPECS, HOST_STORE=store_url,
        HOST_SECRET=SECRET, HOST_AUTH_TOKENS=str(path), OPS_ACTS=str(tmp_path / "acts.jsonl"),
    ) as server:  # fmt: skip
        site = Site([server], tokens, tmp_path / "acts.jsonl")
        pending = site.call("alice", "delete_database", unique("db"))["_meta"]["host/approval"]
        inbox = Browser(server, tokens["bob"])
        page = inbox.request("GET", f"/approvals/requests/{pending['request']}")
        os.kill(redis.proc.pid, signal.SIGSTOP)
        try:
            target = f"/approvals/requests/{pending['request']}"
            decision = {"verdict": "approve", "reason": "", "csrf": csrf(page[2])}
            with ThreadPoolExecutor(4) as pool:
                pages = list(pool.map(lambda args: inbox.request(*args),
                                      [("GET", target, None), ("POST", target, decision),
                                       ("GET", "/approvals", None)]))  # fmt: skip
                api = pool.submit(_refused_everywhere, site, pending["request"], reads=True)
                api.result()
            assert [(status, h.get("retry-after")) for status, h, _ in pages] == [(503, "5")] * 3
        finally:
            os.kill(redis.proc.pid, signal.SIGCONT)
        # NOTE: the stopped Redis may still run the decisions it had read before it stopped:
        # the retry then finds bob's decision kept, and is acknowledged all the same.
        _acknowledged_once(site, pending["request"], store_url)
