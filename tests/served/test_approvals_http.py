"""Remembered approvals and the audit trail over real HTTP: ``host serve`` with two workers on one
SQLite store, and two instances on one Redis.

Callers hold static tokens (``alice``, ``bob``), so each is its own principal; a server without
auth shows what ``anonymous`` means. Every act appends a line to one shared file, so the tests
count acts across processes and instances; the audit trail is read from the store itself.
"""

from __future__ import annotations

import http.client
import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import redis

from host.auth.tokenfile import create_token
from host.cli import main
from host.store import open_store
from host.store.records import AuditRecord
from support.paths import ROOT
from support.servers import Server, clean_env, host_serve
from support.waiting import wait_until
from support.wire import send

pytestmark = pytest.mark.served

FIXTURE = ROOT / "tests" / "fixtures" / "approvals"
SPECS = FIXTURE / "specs"
VERSION = "2026-07-28"
YES = {"action": "accept", "content": {"confirm": True}}
DECLINE = {"action": "decline"}
SECRET = "one-secret-for-every-instance-0123456789abcdef0123456789"


@dataclass
class Caller:
    """One principal's kept-alive connection to one server (and so to one worker)."""

    server: Server
    token: str | None
    conn: http.client.HTTPConnection

    def request(self, tool: str, arguments: dict[str, Any], **extra: Any) -> dict[str, Any]:
        """One modern tools/call round; the JSON-RPC result."""
        params = {
            "name": tool,
            "arguments": arguments,
            **extra,
            "_meta": {
                "io.modelcontextprotocol/protocolVersion": VERSION,
                "io.modelcontextprotocol/clientCapabilities": {"elicitation": {"form": {}}},
            },
        }
        body = {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": params}
        headers = {"MCP-Protocol-Version": VERSION, "Mcp-Method": "tools/call", "Mcp-Name": tool}
        if self.token:
            headers["Authorization"] = f"Bearer {self.token}"
        payload = json.loads(send(self.conn, body, **headers).read())
        assert "result" in payload, payload
        result: dict[str, Any] = payload["result"]
        return result

    def call(
        self, tool: str, arguments: dict[str, Any], answers: dict[str, Any] | None = None
    ) -> tuple[dict[str, Any], list[str]]:
        """A whole call, answering from ``answers``; its result and the questions asked."""
        asked: list[str] = []
        result = self.request(tool, arguments)
        while result.get("resultType") == "input_required":
            keys = list(result["inputRequests"])
            asked += keys
            assert answers is not None, f"{tool} asked {keys} unexpectedly"
            result = self.request(
                tool,
                arguments,
                inputResponses={k: answers[k] for k in keys},
                requestState=result["requestState"],
            )
        return result, asked


def acts(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []


def worker_of(caller: Caller) -> int:
    """The pid of the worker holding the caller's connection (a probe, then its log line)."""
    before = len(caller.server.calls())
    caller.call("probe", {"mode": "ok"})
    wait_until(lambda: len(caller.server.calls()) > before, 5, 0.02)
    pid: int = caller.server.calls()[-1]["pid"]
    return pid


def on_two_workers(server: Server, token: str) -> tuple[Caller, Caller]:
    """Two callers with one token whose connections two different workers hold.

    NOTE: as in ``servers.connections_on_two_workers``: the first worker is paused while the
    second connection is made and used, so the other worker accepts it.
    """
    first = Caller(server, token, server.connect())
    home = worker_of(first)
    other = Caller(server, token, server.connect())
    os.kill(home, signal.SIGSTOP)
    try:
        elsewhere = worker_of(other)
    finally:
        os.kill(home, signal.SIGCONT)
    assert elsewhere != home
    return first, other


def host_cli(*args: str, **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "host", *args],
        capture_output=True, text=True, env=clean_env(**env), timeout=60,
    )  # fmt: skip


@dataclass
class Site:
    """The servers of one set-up, the tokens of its callers, and where its records are."""

    servers: list[Server]
    tokens: dict[str, str]
    acts: Path
    store: str

    def caller(self, who: str, index: int = 0) -> Caller:
        server = self.servers[index]
        return Caller(server, self.tokens.get(who), server.connect())

    def records(
        self,
        tool: str,
        count: int = 1,
        where: Callable[[AuditRecord], bool] = lambda _: True,
        **arguments: Any,
    ) -> list[AuditRecord]:
        """The tool's records whose arguments match, once ``count`` of them are there.

        NOTE: workers write records off the request path, a few milliseconds after the calls
        end: wait for them (5 s at most), then read once more a moment later, so that a record
        too many would show.
        """

        def read() -> list[AuditRecord]:
            store = open_store(self.store)
            try:
                found = store.audit_records(tool=tool, limit=1000)
            finally:
                store.close()
            return [
                r for r in found
                if where(r) and all(r.arguments.get(k) == v for k, v in arguments.items())
            ]  # fmt: skip

        wait_until(lambda: len(read()) >= count, 5.0, 0.02)
        time.sleep(0.1)  # a moment more, for a record too many to show
        return read()


def tokens_for(folder: Path) -> tuple[Path, dict[str, str]]:
    path = folder / "tokens"
    return path, {name: create_token(path, name, [])[0] for name in ("alice", "bob")}


@pytest.fixture(scope="module")
def two_workers(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Site]:
    folder = tmp_path_factory.mktemp("approvals-workers")
    path, tokens = tokens_for(folder)
    with host_serve(
        folder, "host", "--workers", "2", specs=SPECS,
        HOST_AUTH_TOKENS=str(path), OPS_ACTS=str(folder / "acts.jsonl"),
    ) as server:  # fmt: skip
        yield Site(
            [server], tokens, folder / "acts.jsonl", f"sqlite:///{folder / 'host' / 'store.db'}"
        )


@pytest.fixture(scope="module")
def two_instances(tmp_path_factory: pytest.TempPathFactory, redis_url: str) -> Iterator[Site]:
    folder = tmp_path_factory.mktemp("approvals-instances")
    path, tokens = tokens_for(folder)
    shared = {
        "HOST_SECRET": SECRET,
        "HOST_STORE": redis_url,
        "HOST_AUTH_TOKENS": str(path),
        "OPS_ACTS": str(folder / "acts.jsonl"),
    }
    with (
        host_serve(folder, "one", "--workers", "1", specs=SPECS, **shared) as one,
        host_serve(folder, "two", "--workers", "1", specs=SPECS, **shared) as two,
    ):
        yield Site([one, two], tokens, folder / "acts.jsonl", redis_url)


def unique(name: str) -> str:
    return f"{name}-{os.urandom(4).hex()}"


# -- two workers on SQLite ------------------------------------------------------------------------


def test_a_yes_is_remembered_across_workers_and_only_for_its_own(two_workers: Site) -> None:
    site, service = two_workers, unique("api")
    here, there = on_two_workers(site.servers[0], site.tokens["alice"])

    first, asked = here.call("restart_service", {"service": service}, {"restart": YES})
    assert asked == ["restart"] and first["structuredContent"]["remembered"] is False
    again, asked = there.call("restart_service", {"service": service})
    assert asked == [] and again["structuredContent"]["remembered"] is True

    bob = site.caller("bob")
    assert bob.call("restart_service", {"service": service}, {"restart": YES})[1] == ["restart"]
    other_key = {"service": service, "environment": "prod"}
    assert there.call("restart_service", other_key, {"restart": YES})[1] == ["restart"]
    # The same confirm name and key in another tool.
    assert there.call("restart_worker", {"service": service}, {"restart": YES})[1] == ["restart"]
    done = [a for a in acts(site.acts) if a.get("service") == service]
    assert [a["principal"] for a in done] == ["alice", "alice", "bob", "alice", "alice"]


def test_a_remembered_yes_expires(two_workers: Site) -> None:
    site, cache = two_workers, unique("pages")
    here, there = on_two_workers(site.servers[0], site.tokens["alice"])

    assert here.call("flush_cache", {"cache": cache}, {"flush": YES})[1] == ["flush"]
    assert there.call("flush_cache", {"cache": cache})[1] == []
    time.sleep(2.2)  # the scenario: the remembered answer (2 s) expires
    assert there.call("flush_cache", {"cache": cache}, {"flush": YES})[1] == ["flush"]


def test_a_revoked_approval_is_asked_again_at_once(two_workers: Site) -> None:
    site, service = two_workers, unique("db")
    alice = site.caller("alice")
    alice.call("restart_service", {"service": service}, {"restart": YES})
    assert alice.call("restart_service", {"service": service})[1] == []
    data = str(site.servers[0].log.parent / "host")

    listed = host_cli(
        "approvals", "list", "--principal", "alice", "--format", "json", "--data-dir", data
    )
    [mine] = [a for a in json.loads(listed.stdout) if a["key"] == f"{service}/staging"]
    revoked = host_cli("approvals", "revoke", mine["id"], "--data-dir", data)
    assert revoked.returncode == 0, revoked.stderr

    alice = site.caller("alice")  # a new connection, as above: the commands may take a while
    assert alice.call("restart_service", {"service": service}, {"restart": DECLINE})[1] == [
        "restart"
    ]


def test_a_decline_is_recorded_as_declined_and_not_remembered(two_workers: Site) -> None:
    site, service = two_workers, unique("web")
    alice = site.caller("alice")

    result, _ = alice.call("restart_service", {"service": service}, {"restart": DECLINE})

    assert result["structuredContent"] == {"restarted": False}
    [record] = site.records("restart_service", service=service)
    assert (record.outcome, record.principal, record.acted) == ("declined", "alice", False)
    assert record.answers == {"restart": {"action": "decline"}}
    assert alice.call("restart_service", {"service": service}, {"restart": YES})[1] == ["restart"]


def test_redacted_fields_appear_nowhere_in_the_store_files(two_workers: Site) -> None:
    site = two_workers
    recipient, note = unique("clear-recipient"), unique("clear-note")
    answers = {"write": {"action": "accept", "content": {"note": note}}, "send": YES}

    result, _ = site.caller("bob").call("send_note", {"recipient": recipient}, answers)

    assert result["structuredContent"] == {"sent": True, "urgent": False}
    [record] = site.records("send_note", recipient="[redacted]")[:1]
    assert record.principal == "bob" and record.answers["write"]["content"]["note"] == "[redacted]"
    files = list((site.servers[0].log.parent / "host").glob("store.db*"))
    assert any(f.name.endswith("-wal") for f in files)
    for path in files:
        data = path.read_bytes()
        assert recipient.encode() not in data and note.encode() not in data, path.name
    log = site.servers[0].log.read_text()
    assert recipient not in log and note not in log


def test_fifty_concurrent_calls_leave_one_record_each(two_workers: Site) -> None:
    site, batch = two_workers, unique("batch")
    services = [f"{batch}-{n}" for n in range(50)]

    def one(service: str) -> dict[str, Any]:
        caller = site.caller("alice")
        try:
            return caller.call(
                "scale_service", {"service": service, "replicas": 1}, {"scale": YES}
            )[0]
        finally:
            caller.conn.close()

    with ThreadPoolExecutor(max_workers=50) as pool:
        results = list(pool.map(one, services))

    assert all(r["structuredContent"]["replicas"] == 1 for r in results)
    records = site.records("scale_service", 50, lambda r: r.arguments["service"].startswith(batch))
    assert sorted(r.arguments["service"] for r in records) == sorted(services)
    assert all(r.outcome == "acted" and r.approvals == ({"question": "scale", "via": "asked",
               "approval": r.approvals[0]["approval"]},) for r in records)  # fmt: skip


def test_fifty_copies_of_one_final_round_leave_one_record(two_workers: Site) -> None:
    site, service = two_workers, unique("copies")
    first = site.caller("alice").request("scale_service", {"service": service, "replicas": 5})
    final = {"inputResponses": {"scale": YES}, "requestState": first["requestState"]}

    def copy(_: int) -> dict[str, Any]:
        caller = site.caller("alice")
        try:
            return caller.request("scale_service", {"service": service, "replicas": 5}, **final)
        finally:
            caller.conn.close()

    with ThreadPoolExecutor(max_workers=50) as pool:
        results = list(pool.map(copy, range(50)))

    assert all(r["structuredContent"] == {"scaled": service, "replicas": 5} for r in results)
    assert len([a for a in acts(site.acts) if a.get("service") == service]) == 1
    [record] = site.records("scale_service", service=service)
    assert record.outcome == "acted" and record.approvals[0]["via"] == "asked"


# -- two instances on Redis -----------------------------------------------------------------------


def test_a_yes_is_remembered_across_instances_and_only_for_its_own(two_instances: Site) -> None:
    site, service = two_instances, unique("api")
    one, two = site.caller("alice", 0), site.caller("alice", 1)

    assert one.call("restart_service", {"service": service}, {"restart": YES})[1] == ["restart"]
    assert two.call("restart_service", {"service": service})[1] == []
    assert site.caller("bob", 1).call("restart_service", {"service": service}, {"restart": YES})[1]
    assert two.call("restart_service", {"service": service, "environment": "prod"},
                    {"restart": YES})[1] == ["restart"]  # fmt: skip
    assert two.call("restart_worker", {"service": service}, {"restart": YES})[1] == ["restart"]

    revoked = host_cli("approvals", "revoke", "--principal", "alice", "--tool", "restart_service",
                       "--store", site.store)  # fmt: skip
    assert revoked.returncode == 0, revoked.stderr
    # A new connection: the kept-alive one may have idled past the host's keep-alive (5 s)
    # while the command ran, on a busy machine.
    one = site.caller("alice", 0)
    assert one.call("restart_service", {"service": service}, {"restart": YES})[1] == ["restart"]


def test_expiry_and_records_across_instances(two_instances: Site) -> None:
    site, cache = two_instances, unique("pages")
    one, two = site.caller("alice", 0), site.caller("alice", 1)

    assert one.call("flush_cache", {"cache": cache}, {"flush": YES})[1] == ["flush"]
    assert two.call("flush_cache", {"cache": cache})[1] == []
    time.sleep(2.2)  # the scenario: the remembered answer (2 s) expires
    assert two.call("flush_cache", {"cache": cache}, {"flush": DECLINE})[1] == ["flush"]

    outcomes = [
        (r.outcome, [a["via"] for a in r.approvals])
        for r in site.records("flush_cache", 3, cache=cache)
    ]
    assert outcomes == [("declined", []), ("acted", ["remembered"]), ("acted", ["asked"])]


def test_fifty_concurrent_calls_on_two_instances_leave_one_record_each(two_instances: Site) -> None:
    site, batch = two_instances, unique("batch")
    services = [f"{batch}-{n}" for n in range(50)]

    def one(n: int) -> dict[str, Any]:
        caller = site.caller("bob", n % 2)
        try:
            return caller.call(
                "scale_service", {"service": services[n], "replicas": 2}, {"scale": YES}
            )[0]
        finally:
            caller.conn.close()

    with ThreadPoolExecutor(max_workers=50) as pool:
        results = list(pool.map(one, range(50)))

    assert all(not r.get("isError") for r in results)
    records = site.records("scale_service", 50, lambda r: r.arguments["service"].startswith(batch))
    assert sorted(r.arguments["service"] for r in records) == sorted(services)
    assert {r.principal for r in records} == {"bob"}
    # Two instances wrote one audit chain at once: it has no gap and verifies.
    assert main(["audit", "verify", "--store", site.store]) == 0


def test_redacted_fields_appear_nowhere_in_redis(two_instances: Site) -> None:
    site = two_instances
    recipient, note = unique("clear-recipient"), unique("clear-note")
    answers = {"write": {"action": "accept", "content": {"note": note}}, "send": YES}
    site.caller("alice", 1).call("send_note", {"recipient": recipient}, answers)

    admin = redis.Redis.from_url(site.store)
    for key in admin.scan_iter(count=1000):
        dumped = admin.dump(key) or b""
        assert recipient.encode() not in dumped and note.encode() not in dumped, key
    folder = Path(str(admin.config_get("dir")["dir"]))
    for path in folder.rglob("*"):
        if path.is_file():
            data = path.read_bytes()
            assert recipient.encode() not in data and note.encode() not in data, path


# -- anonymous ------------------------------------------------------------------------------------


def test_without_auth_anonymous_shares_one_memory_and_serve_warns(tmp_path: Path) -> None:
    with host_serve(tmp_path, "open", "--workers", "2", specs=SPECS) as server:
        first, second = (
            Caller(server, None, server.connect()),
            Caller(server, None, server.connect()),
        )
        assert first.call("restart_service", {"service": "api"}, {"restart": YES})[1] == ["restart"]
        # Another client, perhaps another person: the same `anonymous`, so not asked.
        assert second.call("restart_service", {"service": "api"})[1] == []
        warning = server.log.read_text()
    assert "every caller is `anonymous` and they share one memory of approvals" in warning
    assert "flush_cache, restart_service, restart_worker, scale_service" in warning
