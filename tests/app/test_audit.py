"""The audit trail, through the test kit (the real app, in-process): one record per ended call.

Over real HTTP, with two workers, two instances and fifty calls at once, see
``test_approvals_http.py``.
"""

from __future__ import annotations

import sqlite3
import time
from pathlib import Path
from typing import Any

import pytest

from host.errors import SettingsError
from host.observers.audit import AuditObserver
from host.observers.batches import flush_all
from host.protocol import Round
from host.settings import Settings
from host.store import open_store
from host.store.records import ACTED, AuditRecord, approval_id
from host.store.signing import Signer
from host.store.sqlite import audit as sqlite_audit
from host.testing import McpClient
from support.paths import FIXTURES

FIXTURE = FIXTURES / "approvals"
YES = {"action": "accept", "content": {"confirm": True}}
NOTE = {"action": "accept", "content": {"note": "the-clear-note-4410", "urgent": True}}


@pytest.fixture
def host_specs() -> Path:
    return FIXTURE / "specs"


def test_an_acted_call_has_one_record_with_the_contract_fields(mcp: McpClient) -> None:
    before = time.time()
    alice = mcp.client(principal="alice")
    alice.tools.call("restart_service", {"service": "api"}, answers={"restart": YES})

    [record] = mcp.audit.records()
    assert record.time >= before and record.principal == "alice"
    assert record.tool == "restart_service" and record.outcome == "acted" and record.acted
    assert record.arguments == {"service": "api"}
    assert record.answers == {"restart": YES}
    assert record.approvals == (
        {
            "question": "restart",
            "via": "asked",
            "approval": approval_id("alice", "restart_service", "restart", "api/staging"),
        },
    )
    assert record.incident is None and 0 < record.duration_s < 60


def test_a_remembered_approval_is_recorded_as_remembered(mcp: McpClient) -> None:
    granted = mcp.approvals.grant("restart_service", "restart", key="api/prod")

    mcp.tools.call("restart_service", {"service": "api", "environment": "prod"})

    record = mcp.audit.last()
    assert record.approvals == (
        {"question": "restart", "via": "remembered", "approval": granted.id},
    )
    assert record.answers == {} and record.outcome == "acted"


@pytest.mark.parametrize(
    ("answer", "outcome"),
    [
        ("decline", "declined"),
        ("cancel", "cancelled"),
        ({"action": "accept", "content": {"confirm": False}}, "unticked"),
    ],
)
def test_a_call_the_user_stops_is_recorded_so(mcp: McpClient, answer: Any, outcome: str) -> None:
    mcp.tools.call("scale_service", {"service": "api", "replicas": 2}, answers={"scale": answer})

    record = mcp.audit.last()
    assert (record.outcome, record.acted, record.approvals) == (outcome, False, ())
    assert record.answers["scale"]["action"] == (answer if isinstance(answer, str) else "accept")


@pytest.mark.parametrize(
    ("mode", "outcome", "incident"), [("ok", "acted", False), ("tool_error", "error", False),
                                      ("crash", "incident", True)]
)  # fmt: skip
def test_errors_and_incidents_are_recorded(
    mcp: McpClient, mode: str, outcome: str, incident: bool
) -> None:
    result = mcp.tools.call("probe", {"mode": mode})

    record = mcp.audit.last(tool="probe")
    assert record.outcome == outcome and record.acted
    assert (record.incident is not None) == incident
    if incident:
        assert record.incident in result.text()


def test_a_call_of_several_rounds_has_one_record(mcp: McpClient) -> None:
    result = mcp.tools.call("send_note", {"recipient": "sam"}, answers={"write": NOTE, "send": YES})

    assert result.rounds == 2
    [record] = mcp.audit.records()
    assert set(record.answers) == {"write", "send"}
    assert record.approvals == ({"question": "send", "via": "asked"},)


def test_rounds_that_ask_write_nothing(mcp: McpClient) -> None:
    response = mcp.raw.request(
        {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "tools/call",
            "params": {"name": "restart_service", "arguments": {"service": "api"}},
        }
    )

    assert response.result["resultType"] == "input_required"
    assert mcp.audit.records() == []


def test_a_client_that_cannot_be_asked_ends_the_call_with_an_error(mcp: McpClient) -> None:
    mute = mcp.client(capabilities={})

    result = mute.tools.call("restart_service", {"service": "api"})

    assert result.error is not None and result.error.code == -32021
    record = mcp.audit.last()
    assert (record.outcome, record.code, record.acted) == ("error", -32021, False)


def test_redacted_fields_never_reach_the_store(mcp: McpClient, host_data_dir: Path) -> None:
    mcp.tools.call(
        "send_note", {"recipient": "the-clear-recipient-7731"}, answers={"write": NOTE, "send": YES}
    )

    record = mcp.audit.last()
    assert record.arguments == {"recipient": "[redacted]"}
    assert record.answers["write"] == {
        "action": "accept",
        "content": {"note": "[redacted]", "urgent": True},
    }
    files = sorted(host_data_dir.glob("store.db*"))
    assert {f.name for f in files} >= {"store.db", "store.db-wal"}
    for path in files:
        data = path.read_bytes()
        assert b"the-clear-recipient-7731" not in data and b"the-clear-note-4410" not in data


def test_an_act_past_its_time_limit_is_recorded_once_as_an_incident(mcp: McpClient) -> None:
    first = mcp.raw.request(
        {"jsonrpc": "2.0", "id": 1, "method": "tools/call",
         "params": {"name": "slow_job", "arguments": {"seconds": 0.6}}}
    )  # fmt: skip
    final = {
        "jsonrpc": "2.0",
        "id": 2,
        "method": "tools/call",
        "params": {
            "name": "slow_job",
            "arguments": {"seconds": 0.6},
            "inputResponses": {"go": YES},
            "requestState": first.result["requestState"],
        },
    }

    running = mcp.raw.request(final)
    assert running.result["isError"] and "still running" in running.result["content"][0]["text"]
    time.sleep(0.8)  # the scenario: the act (0.6 s) finishes before the retry
    retried = mcp.raw.request({**final, "id": 3})

    assert retried.result["structuredContent"] == {"done": True}
    [record] = mcp.audit.records()
    assert (record.outcome, record.acted) == ("incident", True)
    assert record.incident is not None and record.incident in running.result["content"][0]["text"]


def test_a_store_that_cannot_take_the_record_does_not_fail_the_call(
    mcp: McpClient, host_data_dir: Path, caplog: pytest.LogCaptureFixture
) -> None:
    mcp.tools.call("probe", {"mode": "ok"})
    assert len(mcp.audit.records()) == 1
    holder = sqlite3.connect(host_data_dir / "store.db", isolation_level=None, timeout=5)
    try:
        holder.execute("BEGIN EXCLUSIVE")  # a stuck writer in another process
        result = mcp.tools.call("probe", {"mode": "ok"})
        flush_all()  # the record's write, off the request path, gives up after a second
    finally:
        holder.execute("ROLLBACK")
        holder.close()

    # The record is held while the store refuses it, and written once it takes writes again.
    assert result.json() == {"ok": True}
    assert [r for r in caplog.records if getattr(r, "event", None) == "audit_held"]
    deadline = time.monotonic() + 15
    while len(mcp.audit.records()) < 2 and time.monotonic() < deadline:
        time.sleep(0.05)
    assert len(mcp.audit.records()) == 2


def test_records_past_the_retention_period_are_pruned(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = open_store(f"sqlite:///{tmp_path / 'store.db'}")
    try:
        now = time.time()
        store.sign_checkpoints(Signer.derived("k" * 32), every=1)
        old = AuditRecord("old", now - 7200, "alice", "probe", "acted")
        with monkeypatch.context() as past:  # written, and its checkpoint signed, 2 hours ago
            past.setattr(sqlite_audit.time, "time", lambda: now - 7200)
            store.write_audit(old, rank=ACTED, keep_s=86400)
        observer = AuditObserver(store, retention_s=3600)
        ended = Round("probe", 1, "bob", time.monotonic(), nonce="n-1", ends=True)

        observer.round_ended(ended)
        observer.round_ended(Round("probe", 1, "bob", time.monotonic(), nonce="n-2"))
        assert observer.flush()

        assert [(r.principal, r.tool) for r in store.audit_records()] == [("bob", "probe")]
    finally:
        store.close()


def test_the_retention_period_is_a_duration() -> None:
    assert Settings.from_env({}).audit_retention_s == 90 * 86400
    assert Settings.from_env({"HOST_AUDIT_RETENTION": "30d"}).audit_retention_s == 30 * 86400
    with pytest.raises(SettingsError, match="HOST_AUDIT_RETENTION: '90' is not a duration"):
        Settings.from_env({"HOST_AUDIT_RETENTION": "90"})
