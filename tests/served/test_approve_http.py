"""Another person's yes over real HTTP: ``host serve`` with two workers on SQLite, and two
instances on one Redis, with static tokens.

``alice`` calls (and holds ops:approve herself, which must not let her approve her own
requests); ``bob`` and ``carol`` approve; ``dave`` holds no approver scope. Every act appends a
line to one shared file, so acts are counted across processes and instances.
"""

from __future__ import annotations

import http.client
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest

from host.times import parse_iso
from support.approvals import (
    SECRET,
    SPECS,
    SURE,
    VERSION,
    Site,
    make_tokens,
    round_trip,
    unique,
)
from support.servers import clean_env, host_serve
from support.wire import send, sse

pytestmark = pytest.mark.served


@pytest.fixture(scope="module")
def two_workers(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Site]:
    folder = tmp_path_factory.mktemp("approve-workers")
    path, tokens = make_tokens(folder)
    with host_serve(
        folder, "host", "--workers", "2", specs=SPECS,
        HOST_AUTH_TOKENS=str(path), OPS_ACTS=str(folder / "acts.jsonl"),
    ) as server:  # fmt: skip
        yield Site([server], tokens, folder / "acts.jsonl")


@pytest.fixture(scope="module")
def two_instances(tmp_path_factory: pytest.TempPathFactory, redis_url: str) -> Iterator[Site]:
    folder = tmp_path_factory.mktemp("approve-instances")
    path, tokens = make_tokens(folder)
    shared = {"HOST_SECRET": SECRET, "HOST_STORE": redis_url, "HOST_AUTH_TOKENS": str(path),
              "OPS_ACTS": str(folder / "acts.jsonl")}  # fmt: skip
    with (
        host_serve(folder, "one", "--workers", "1", specs=SPECS, **shared) as one,
        host_serve(folder, "two", "--workers", "1", specs=SPECS, **shared) as two,
    ):
        yield Site([one, two], tokens, folder / "acts.jsonl")


@pytest.fixture(params=["two_workers", "two_instances"])
def either(request: pytest.FixtureRequest) -> Site:
    """Each test runs on two workers over SQLite, and on two instances over Redis."""
    site: Site = request.getfixturevalue(request.param)
    return site


def _held_call_acts_once(site: Site, approve_on: int) -> None:
    service = unique("web")
    results: list[dict[str, Any]] = []
    held = threading.Thread(
        target=lambda: results.append(site.call("alice", "restart_service", service))
    )
    held.start()
    request = site.wait_pending("bob", service, approve_on)
    assert request["caller"] == "alice" and request["tool"] == "restart_service"
    assert request["message"] == f"alice asks to restart_service {service}."
    assert request["needed"] == 1 and request["approved_by"] == []
    status, body = site.api("bob", "POST", f"/{request['id']}/approve", {"reason": "ok"},
                            approve_on)  # fmt: skip
    assert status == 200 and body["status"] == "approved", body
    held.join(30)
    (result,) = results
    assert not result.get("isError"), result
    assert result["structuredContent"] == {"restarted": service, "approved_by": ["bob"]}
    (act,) = site.acted(service)
    assert act["principal"] == "alice" and act["request"] == request["id"]
    # bob's retry (its first answer lost) is acknowledged, not recorded again; carol is late.
    status, body = site.api("bob", "POST", f"/{request['id']}/approve", {"reason": "again"})
    assert status == 200 and body["approved_by"] == ["bob"], body
    status, body = site.api("carol", "POST", f"/{request['id']}/approve", {"reason": "late"})
    assert status == 409


def test_a_held_call_acts_once_approved_on_another_worker(two_workers: Site) -> None:
    _held_call_acts_once(two_workers, 0)


def test_a_held_call_acts_once_approved_on_another_instance(two_instances: Site) -> None:
    _held_call_acts_once(two_instances, 1)


def test_approval_after_the_wait_lets_the_next_call_act_once(either: Site) -> None:
    site, service = either, unique("api")
    first = site.call("alice", "rollback", service)
    assert first["isError"] is True
    meta = first["_meta"]["host/approval"]
    assert meta["status"] == "pending" and meta["needed"] == 1
    assert parse_iso(meta["expires"]) > time.time()  # ISO 8601 UTC, as every time shown
    text = first["content"][0]["text"]
    assert meta["request"] in text and "ops:approve" in text and "same arguments" in text
    assert (
        site.call("alice", "rollback", service)["_meta"]["host/approval"]["request"]
        == (meta["request"])
    )  # the same caller with the same arguments finds the same request
    cli = _cli("approve", meta["request"], "--reason", "go", url=site.servers[0].url,
               token=site.tokens["bob"])  # fmt: skip
    assert cli.returncode == 0, cli.stderr
    assert "approved" in cli.stdout
    done = site.call("alice", "rollback", service)
    assert not done.get("isError") and done["structuredContent"]["approved_by"] == ["bob"]
    shown = _cli("show", meta["request"], url=site.servers[0].url, token=site.tokens["carol"])
    assert shown.returncode == 0, shown.stderr
    head, *rest = shown.stdout.splitlines()
    assert head.split() == [meta["request"], "rollback", "by", "alice", "approved,", "acted"]
    assert '    approved by bob "go"' in rest, shown.stdout
    third = site.call("alice", "rollback", service)
    assert third["_meta"]["host/approval"]["request"] != meta["request"]
    assert len(site.acted(service)) == 1


def test_reject_and_expiry_end_the_call_without_acting(either: Site) -> None:
    site, service = either, unique("db")
    pending = site.call("alice", "rollback", service)["_meta"]["host/approval"]
    status, _ = site.api("carol", "POST", f"/{pending['request']}/reject", {"reason": "not now"})
    assert status == 200
    rejected = site.call("alice", "rollback", service)
    assert rejected["structuredContent"] == {"done": False, "reason": "not now"}
    site.call("alice", "purge_cache", service)
    time.sleep(2.2)
    expired = site.call("alice", "purge_cache", service)
    assert expired["structuredContent"] == {"done": False, "reason": "Nobody decided in time."}
    assert site.acted(service) == []


def test_nobody_approves_their_own_request(either: Site) -> None:
    site, service = either, unique("queue")
    request = site.call("alice", "rollback", service)["_meta"]["host/approval"]["request"]
    assert site.pending("alice", service) == []  # not hers to decide
    status, body = site.api("alice", "POST", f"/{request}/approve", {"reason": "me"})
    assert status == 403, body
    status, body = site.api("dave", "POST", f"/{request}/approve", {})
    assert status == 403, body
    cli = _cli("approve", request, url=site.servers[0].url, token=site.tokens["alice"])
    assert cli.returncode == 1 and "403" in cli.stderr
    status, body = site.api("alice", "GET", f"/{request}")
    assert status == 200 and body["status"] == "pending"  # she may see it
    assert site.call("alice", "rollback", service)["isError"] is True
    assert site.acted(service) == []


def test_count_two_needs_two_people(either: Site) -> None:
    site, service = either, unique("orders")
    request = site.call("alice", "delete_database", service)["_meta"]["host/approval"]["request"]
    status, body = site.api("bob", "POST", f"/{request}/approve", {"reason": "one"})
    assert status == 200 and body["status"] == "pending" and body["approved_by"] == ["bob"]
    assert site.call("alice", "delete_database", service)["isError"] is True
    status, body = site.api("bob", "POST", f"/{request}/approve", {"reason": "again"})
    assert status == 200 and body["approved_by"] == ["bob"] and body["status"] == "pending"
    status, body = site.api("bob", "POST", f"/{request}/reject", {"reason": "changed my mind"})
    assert status == 409
    status, body = site.api("carol", "POST", f"/{request}/approve", {"reason": "two"})
    assert status == 200 and body["status"] == "approved"
    done = site.call("alice", "delete_database", service)
    assert done["structuredContent"]["approved_by"] == ["bob", "carol"]
    assert len(site.acted(service)) == 1


def test_fifty_identical_calls_make_one_request_and_one_act(either: Site) -> None:
    site, service = either, unique("cdn")
    with ThreadPoolExecutor(10) as pool:
        results = list(
            pool.map(lambda _: site.call("alice", "delete_database", service), range(50))
        )
    ids = {r["_meta"]["host/approval"]["request"] for r in results}
    assert len(ids) == 1
    (request,) = ids
    for who in ("bob", "carol"):
        assert site.api(who, "POST", f"/{request}/approve", {"reason": ""})[0] == 200
    with ThreadPoolExecutor(10) as pool:
        again = list(pool.map(lambda _: site.call("alice", "delete_database", service), range(50)))
    assert sum(1 for r in again if not r.get("isError")) == 1
    assert len(site.acted(service)) == 1


def _cli(*args: str, url: str, token: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "host", "approvals", *args, "--url", url, "--token", token],
        capture_output=True, text=True, env=clean_env(), timeout=60,
    )  # fmt: skip


def test_a_waiting_call_that_asked_for_progress_hears_how_it_stands(two_workers: Site) -> None:
    site, service = two_workers, unique("progress")
    conn = http.client.HTTPConnection("127.0.0.1", site.servers[0].port, timeout=60)
    token, arguments = site.tokens["alice"], {"service": service}
    asked = round_trip(conn, token, "restart_service", arguments)
    meta = {
        "io.modelcontextprotocol/protocolVersion": VERSION,
        "io.modelcontextprotocol/clientCapabilities": {"elicitation": {"form": {}}},
        "progressToken": "p-1",
    }
    params = {"name": "restart_service", "arguments": arguments, "_meta": meta,
              "inputResponses": SURE, "requestState": asked["requestState"]}  # fmt: skip
    body = {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": params}
    headers = {"MCP-Protocol-Version": VERSION, "Mcp-Method": "tools/call",
               "Mcp-Name": "restart_service", "Authorization": f"Bearer {token}"}  # fmt: skip
    response = send(conn, body, **headers)
    assert response.getheader("Content-Type") == "text/event-stream"
    messages = sse(response)
    first = next(messages)
    assert first["method"] == "notifications/progress"
    assert first["params"]["progressToken"] == "p-1"
    assert first["params"]["message"] == "waiting for 1 approval from ops:approve"
    request = site.wait_pending("bob", service)
    site.api("bob", "POST", f"/{request['id']}/approve", {"reason": "ok"})
    last = [m for m in messages if "result" in m][-1]
    assert last["result"]["structuredContent"]["approved_by"] == ["bob"]
