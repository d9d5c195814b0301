"""Around approval requests, over real HTTP: the signed webhook with its retries, a reload that
voids a request, and the audit trail's record of who decided."""

from __future__ import annotations

import hashlib
import hmac
import json
import os
import re
import shutil
import signal
import threading
import time
import types
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from host.cli import main
from host.store import open_store
from support.approvals import SPECS, Site, make_tokens, round_trip, unique
from support.inbox_http import Browser
from support.paths import ROOT
from support.servers import free_port, host_serve
from support.wire import send

pytestmark = pytest.mark.served

WEBHOOK_SECRET = "webhook-secret-for-tests"
#: A tool whose approve message names a field audit.redact keeps out of every record.
ROTATE_KEY = """\
kind: tool
name: rotate_key
description: Rotate a service's key under a change ticket kept out of every record.
annotations: {destructiveHint: true}
input:
  properties:
    service: {type: string}
    ticket: {type: string}
  required: [service, ticket]
audit: {redact: [ticket]}
steps:
  - confirm: sure
    message: rotate_key {{ service }}?
  - approve: change
    message: "{{ caller }} asks to rotate {{ service }} under {{ ticket }}."
    approvers: [ops:approve]
    wait: 0s
  - act: ops:restart
"""
#: What the approvers' chat would show as a link and a ping, were it not escaped.
SLACK_BAIT = "<https://evil.example/x|Approve here> <!channel>"


class Receiver:
    """A webhook receiver that fails the first ``fail`` deliveries with 500."""

    def __init__(self, fail: int) -> None:
        self.fail = fail
        self.got: list[tuple[bytes, dict[str, str], float]] = []
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers["Content-Length"]))
                receiver.got.append((body, dict(self.headers), time.monotonic()))
                failing = len(receiver.got) <= receiver.fail
                self.send_response(500 if failing else 204)
                self.end_headers()

            def log_message(self, *args: Any) -> None:
                pass

        self.port = free_port()
        self.server = ThreadingHTTPServer(("127.0.0.1", self.port), Handler)
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def bodies(self, event: str) -> list[tuple[dict[str, Any], dict[str, str], float]]:
        found = []
        for body, headers, at in self.got:
            data = json.loads(body)
            if data["event"] == event:
                found.append((data, headers, at))
        return found


@pytest.fixture(scope="module")
def receiver() -> Iterator[Receiver]:
    got = Receiver(fail=2)
    yield got
    got.server.shutdown()


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory, receiver: Receiver) -> Iterator[Site]:
    folder = tmp_path_factory.mktemp("approve-notify")
    specs = folder / "specs"
    shutil.copytree(SPECS, specs)
    shutil.copytree(SPECS.parent / "handlers", folder / "handlers")
    (specs / "keys.yaml").write_text(ROTATE_KEY)
    path, tokens = make_tokens(folder)
    with host_serve(
        folder, "host", "--workers", "2", specs=specs,
        HOST_AUTH_TOKENS=str(path), OPS_ACTS=str(folder / "acts.jsonl"),
        HOST_APPROVALS_WEBHOOK=f"http://127.0.0.1:{receiver.port}/hook",
        HOST_APPROVALS_WEBHOOK_SECRET=WEBHOOK_SECRET, HOST_PUBLIC_URL="https://ops.example.com",
        HOST_LIMIT_PENDING_APPROVALS="3",
    ) as server:  # fmt: skip
        yield Site([server], tokens, folder / "acts.jsonl")


def test_the_webhook_is_signed_and_retried(site: Site, receiver: Receiver) -> None:
    service = unique("hooked")
    started = time.monotonic()
    first = site.call("alice", "rollback", service)
    assert time.monotonic() - started < 5  # the receiver's failures never delay the call
    request = first["_meta"]["host/approval"]["request"]
    deadline = time.monotonic() + 15
    while time.monotonic() < deadline:
        mine = [b for b in receiver.bodies("requested") if b[0]["request"]["id"] == request]
        if len(mine) >= 3:
            break
        time.sleep(0.1)
    assert len(mine) == 3, receiver.got  # two failures, then delivered
    data, headers, _ = mine[-1]
    body = json.dumps(data, ensure_ascii=False).encode()
    raw = next(b for b, _, _ in receiver.got if json.loads(b) == data)
    signed = headers["X-Host-Timestamp"].encode() + b"." + raw
    expected = "sha256=" + hmac.new(WEBHOOK_SECRET.encode(), signed, hashlib.sha256).hexdigest()
    assert headers["X-Host-Signature"] == expected and body
    assert abs(int(headers["X-Host-Timestamp"]) - time.time()) < 60
    # One event id per notification, kept on its retries; another notification, another id.
    assert len({h["X-Host-Event-Id"] for _, h, _ in mine}) == 1
    assert data["request"]["tool"] == "rollback" and data["request"]["caller"] == "alice"
    assert data["request"]["arguments"] == {"service": service}
    assert data["request"]["status"] == "pending"
    assert data["request"]["url"] == f"https://ops.example.com/approvals/requests/{request}"
    assert data["request"]["url"] in data["text"] and "\n" not in data["text"]
    assert mine[1][2] - mine[0][2] >= 0.9  # backoff between tries
    site.api("bob", "POST", f"/{request}/approve", {"reason": "fine"})
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline and not [
        b for b in receiver.bodies("approved") if b[0]["request"]["id"] == request
    ]:
        time.sleep(0.1)
    (approved,) = [b for b in receiver.bodies("approved") if b[0]["request"]["id"] == request]
    assert approved[0]["request"]["status"] == "approved"
    assert approved[1]["X-Host-Event-Id"] != headers["X-Host-Event-Id"]


def test_the_audit_record_names_the_request_and_its_approvers(site: Site) -> None:
    service = unique("audited")
    request = site.call("alice", "rollback", service)["_meta"]["host/approval"]["request"]
    site.api("bob", "POST", f"/{request}/approve", {"reason": "checked"})
    assert not site.call("alice", "rollback", service).get("isError")
    store = open_store(f"sqlite:///{site.servers[0].log.parent / 'host' / 'store.db'}")
    try:
        deadline = time.monotonic() + 5
        while time.monotonic() < deadline:
            records = [
                r for r in store.audit_records(tool="rollback", limit=100)
                if r.arguments.get("service") == service
            ]  # fmt: skip
            if len(records) == 2:
                break
            time.sleep(0.05)
    finally:
        store.close()
    outcomes = sorted(r.outcome for r in records)
    assert outcomes == ["acted", "pending"]
    acted = next(r for r in records if r.outcome == "acted")
    (used,) = [a for a in acted.approvals if a.get("via") == "approvers"]
    assert used["request"] == request and used["approved_by"] == ["bob"]
    (decision,) = used["decisions"]
    assert decision["principal"] == "bob" and decision["reason"] == "checked"
    assert decision["verdict"] == "approve" and decision["time"].endswith("Z")  # ISO 8601 UTC


def test_a_reload_that_changes_the_tool_voids_its_requests(site: Site) -> None:
    service = unique("reloaded")
    request = site.call("alice", "rollback", service)["_meta"]["host/approval"]["request"]
    specs = Path(site.servers[0].log.parent / "specs" / "ops.yaml")
    specs.write_text(specs.read_text().replace("asks to rollback", "asks to roll back"))
    os.kill(site.servers[0].pid, signal.SIGHUP)
    deadline = time.monotonic() + 30
    status, body = 0, {}
    while time.monotonic() < deadline:
        status, body = site.api("bob", "GET", f"/{request}")
        if status == 200 and body["status"] == "voided":
            break
        time.sleep(0.2)
    assert body["status"] == "voided", body
    status, _ = site.api("bob", "POST", f"/{request}/approve", {"reason": "too late"})
    assert status == 409
    again = site.call("alice", "rollback", service)["_meta"]["host/approval"]["request"]
    assert again != request
    assert site.acted(service) == []


def test_a_refused_call_leaves_a_refused_record(site: Site) -> None:
    bad = Site(site.servers, {"mallory": "host_not-a-real-token"}, site.acts)
    conn = site.servers[0].connect()
    with pytest.raises(AssertionError):
        round_trip(conn, bad.tokens["mallory"], "rollback", {"service": "x"})
    store = open_store(f"sqlite:///{site.servers[0].log.parent / 'host' / 'store.db'}")
    try:
        deadline = time.monotonic() + 5
        found: list[Any] = []
        while time.monotonic() < deadline and not found:
            found = [r for r in store.audit_records(limit=200) if r.outcome == "refused"]
            time.sleep(0.05)
    finally:
        store.close()
    assert found and found[0].principal == "(unauthenticated)" and found[0].code == 401
    assert found[0].arguments == {}


def test_metrics_count_requests_decisions_and_time_to_decide(site: Site) -> None:
    service = unique("counted")
    request = site.call("alice", "rollback", service)["_meta"]["host/approval"]["request"]
    site.api("bob", "POST", f"/{request}/reject", {"reason": "no"})
    conn = site.servers[0].connect()
    conn.request("GET", "/metrics")
    text = conn.getresponse().read().decode()

    def value(name: str, **labels: str) -> float:
        wanted = ",".join(f'{k}="{v}"' for k, v in sorted(labels.items()))
        for line in text.splitlines():
            if line.startswith(name + "{"):
                inside = line[len(name) + 1 : line.index("}")]
                if ",".join(sorted(inside.split(","))) == wanted:
                    return float(line.rsplit(" ", 1)[1])
        return 0.0

    assert value("host_approval_requests_total", tool="rollback") >= 1
    assert value("host_approval_pending_total", tool="rollback") >= 1
    assert value("host_approval_decisions_total", tool="rollback", verdict="reject") >= 1
    assert value("host_approval_decide_seconds_count", tool="rollback") >= 1


def test_past_the_pending_limit_a_call_gets_429(site: Site) -> None:
    for _ in range(3):
        assert site.call("carol", "rollback", unique("many"))["isError"] is True
    conn = site.servers[0].connect()
    params = {
        "name": "rollback",
        "arguments": {"service": unique("many")},
        "_meta": {
            "io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientCapabilities": {"elicitation": {"form": {}}},
        },
    }
    first = round_trip(conn, site.tokens["carol"], "rollback", params["arguments"])
    extra = {"inputResponses": {"sure": {"action": "accept", "content": {"confirm": True}}},
             "requestState": first["requestState"]}  # fmt: skip
    body = {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {**params, **extra}}
    token = site.tokens["carol"]
    headers = {"MCP-Protocol-Version": "2026-07-28", "Mcp-Method": "tools/call",
               "Mcp-Name": "rollback", "Authorization": f"Bearer {token}"}  # fmt: skip
    response = send(conn, body, **headers)
    payload = json.loads(response.read())
    assert response.status == 429 and response.getheader("Retry-After")
    assert payload["error"]["data"]["limit"] == "pending_approvals"


def _notified(receiver: Receiver, request: str, event: str = "requested") -> tuple[Any, ...]:
    deadline = time.monotonic() + 15
    while time.monotonic() < deadline:
        for found in receiver.bodies(event):
            if found[0]["request"]["id"] == request:
                raw = next(b for b, _, _ in receiver.got if json.loads(b) == found[0])
                return (*found, raw)
        time.sleep(0.05)
    raise AssertionError(f"no {event} notification for {request}")


def _whole_call(site: Site, who: str, tool: str, arguments: dict[str, Any]) -> dict[str, Any]:
    conn = site.servers[0].connect()
    asked = round_trip(conn, site.tokens[who], tool, arguments)
    extra = {"inputResponses": {"sure": {"action": "accept", "content": {"confirm": True}}},
             "requestState": asked["requestState"]}  # fmt: skip
    return round_trip(conn, site.tokens[who], tool, arguments, **extra)


def test_a_callers_slack_markup_reaches_the_chat_as_text(site: Site, receiver: Receiver) -> None:
    service = unique("web") + " " + SLACK_BAIT + " & more"
    result = site.call("dave", "rollback", service)
    request = result["_meta"]["host/approval"]["request"]
    data, _, _, _ = _notified(receiver, request)
    text = data["text"]
    # The only link is the host's; the caller's markup is escaped, and nothing pings.
    assert text.count("<") == 1 and text.count(">") == 1, text
    assert text.endswith(f"<https://ops.example.com/approvals/requests/{request}|Open the request>")
    assert "&lt;https://evil.example/x|Approve here&gt; &lt;!channel&gt; &amp; more" in text
    assert "<!channel>" not in text and "\n" not in text
    assert text.count("dave") == 1, text  # the caller, named once
    assert data["request"]["arguments"] == {"service": service}  # the JSON keeps it as sent


def test_a_redacted_field_is_redacted_everywhere_approvers_read(
    site: Site, receiver: Receiver
) -> None:
    ticket = "CHG-" + os.urandom(6).hex()
    service = unique("keys")
    result = _whole_call(site, "dave", "rotate_key", {"service": service, "ticket": ticket})
    request = result["_meta"]["host/approval"]["request"]
    data, _, _, raw = _notified(receiver, request)
    assert data["request"]["message"] == f"dave asks to rotate {service} under [redacted]."
    assert data["request"]["arguments"] == {"service": service, "ticket": "[redacted]"}
    assert ticket not in raw.decode()
    status, body = site.api("bob", "GET", f"/{request}")
    assert status == 200 and ticket not in json.dumps(body)
    assert body["message"] == f"dave asks to rotate {service} under [redacted]."
    page = Browser(site.servers[0], site.tokens["bob"]).request(
        "GET", f"/approvals/requests/{request}"
    )
    assert page[0] == 200 and "[redacted]" in page[2] and ticket not in page[2]
    status, _ = site.api("bob", "POST", f"/{request}/approve", {"reason": "fine"})
    assert status == 200
    done = _whole_call(site, "dave", "rotate_key", {"service": service, "ticket": ticket})
    assert not done.get("isError"), done
    _notified(receiver, request, "approved")
    # The store's files (the database, its journal) and the audit trail never hold it.
    data_dir = site.servers[0].log.parent / "host"
    store = open_store(f"sqlite:///{data_dir / 'store.db'}")
    try:
        deadline = time.monotonic() + 5
        while time.monotonic() < deadline and not [
            r for r in store.audit_records(tool="rotate_key") if r.outcome == "acted"
        ]:
            time.sleep(0.05)
        (acted,) = [r for r in store.audit_records(tool="rotate_key") if r.outcome == "acted"]
        assert acted.arguments["ticket"] == "[redacted]"
    finally:
        store.close()
    for file in data_dir.rglob("*"):
        if file.is_file():
            assert ticket.encode() not in file.read_bytes(), file


def test_the_documented_receiver_accepts_the_hosts_posts_and_refuses_stale_ones(
    site: Site, receiver: Receiver
) -> None:
    page = (ROOT / "docs" / "approvals-for-authors.md").read_text()
    (code,) = [b for b in re.findall(r"```python\n(.*?)```", page, re.S) if "def verified" in b]
    namespace: dict[str, Any] = {}
    exec(compile(code, "approvals-for-authors.md", "exec"), namespace)
    verified = namespace["verified"]
    request = site.call("dave", "rollback", unique("received"))["_meta"]["host/approval"]
    _, headers, _, raw = _notified(receiver, request["request"])
    assert verified(raw, headers, WEBHOOK_SECRET) is True
    assert verified(raw.replace(b"dave", b"eve!"), headers, WEBHOOK_SECRET) is False
    assert verified(raw, headers, "another-secret") is False
    later = int(headers["X-Host-Timestamp"]) + 301
    namespace["time"] = types.SimpleNamespace(time=lambda: float(later))
    assert verified(raw, headers, WEBHOOK_SECRET) is False  # replayed five minutes later


def _floats(value: Any) -> list[float]:
    """Every number in ``value`` that reads as a Unix time (after 2001)."""
    if isinstance(value, dict):
        return [f for v in value.values() for f in _floats(v)]
    if isinstance(value, list):
        return [f for v in value for f in _floats(v)]
    return [value] if isinstance(value, float | int) and value > 1e9 else []


def test_each_decision_leaves_its_record_and_the_text_line_shows_it(
    site: Site, capsys: pytest.CaptureFixture[str]
) -> None:
    data = site.servers[0].log.parent / "host"
    rejected, approved, expired = unique("rej"), unique("app"), unique("exp")
    no = site.call("alice", "rollback", rejected)["_meta"]["host/approval"]["request"]
    site.api("bob", "POST", f"/{no}/reject", {"reason": "not during the freeze"})
    yes = site.call("alice", "rollback", approved)["_meta"]["host/approval"]["request"]
    site.api("bob", "POST", f"/{yes}/approve", {"reason": "checked the dashboard"})
    assert not site.call("alice", "rollback", approved).get("isError")
    late = site.call("alice", "purge_cache", expired)["_meta"]["host/approval"]["request"]
    time.sleep(2.1)  # the request's own expiry
    assert "Nobody decided in time" in json.dumps(site.call("alice", "purge_cache", expired))

    def decisions() -> dict[str, Any]:
        store = open_store(f"sqlite:///{data / 'store.db'}")
        try:
            found = store.audit_records(principal="bob", limit=100)
            found += store.audit_records(tool="purge_cache", limit=100)
        finally:
            store.close()
        return {r.detail["request"]: r for r in found if r.kind == "decision"}

    deadline = time.monotonic() + 10
    while not {no, yes, late} <= set(decisions()) and time.monotonic() < deadline:
        time.sleep(0.1)
    found = decisions()
    assert (found[no].principal, found[no].detail["verdict"]) == ("bob", "rejected")
    assert found[no].detail["reason"] == "not during the freeze"
    assert (found[yes].principal, found[yes].detail["verdict"]) == ("bob", "approved")
    assert (found[late].principal, found[late].detail["verdict"]) == ("(host)", "expired")

    assert main(["audit", "--data-dir", str(data), "--limit", "1000"]) == 0
    text = capsys.readouterr().out
    assert re.search(rf'decision  request {no} rejected by bob \d\d:\d\dZ "not during the', text)
    acted = next(line for line in text.splitlines() if approved in line and " acted " in line)
    assert re.search(r'approved: approved by bob \d\d:\d\dZ "checked the dashboard"', acted)
    assert re.search(rf"decision  request {late} expired \d\d:\d\dZ", text)

    # No Unix times in any output: the trail, the API, host approvals.
    assert main(["audit", "--data-dir", str(data), "--format", "json", "--limit", "1000"]) == 0
    assert _floats(json.loads(capsys.readouterr().out)) == []
    status, body = site.api("bob", "GET", f"/{no}")
    assert status == 200 and _floats(body) == []
