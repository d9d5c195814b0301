"""``host approvals remembered|revoke`` and ``host audit``, against a real store file."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from host.cli import main
from host.store import Store, open_store
from host.store.records import ACTED, ENDED, AuditRecord


@pytest.fixture
def data(tmp_path: Path) -> Iterator[Store]:
    store = open_store(f"sqlite:///{tmp_path / 'data' / 'store.db'}")
    yield store
    store.close()


def host(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    status = main(list(argv))
    out, err = capsys.readouterr()
    return status, out, err


def test_remembered_says_what_it_lists_and_list_is_its_older_name(
    data: Store, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    a = data.grant_approval("alice", "restart_service", "restart", "api/prod", 3600)
    where = ("--data-dir", str(tmp_path / "data"))

    status, out, err = host(capsys, "approvals", "remembered", "--format", "json", *where)
    assert status == 0 and [x["id"] for x in json.loads(out)] == [a.id] and err == ""
    status, old, err = host(capsys, "approvals", "list", "--format", "json", *where)
    assert status == 0 and old == out
    assert "list is the older name of remembered" in err and "host approvals pending" in err


def test_approvals_are_listed_with_ids(
    data: Store, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    a = data.grant_approval("alice", "restart_service", "restart", "api/prod", 3600)
    data.grant_approval("bob", "scale_service", "scale", "args:1234", 3600)
    where = ("--data-dir", str(tmp_path / "data"))

    status, out, _ = host(capsys, "approvals", "list", *where)
    assert status == 0
    lines = out.splitlines()
    assert lines[0].split() == ["ID", "PRINCIPAL", "TOOL", "QUESTION", "EXPIRES", "KEY"]
    assert lines[1].split()[:4] == [a.id, "alice", "restart_service", "restart"]
    assert lines[1].endswith("api/prod") and len(lines) == 3

    status, out, _ = host(
        capsys, "approvals", "list", "--principal", "bob", "--format", "json", *where
    )
    [only] = json.loads(out)
    assert (status, only["principal"], only["tool"], only["key"]) == (
        0,
        "bob",
        "scale_service",
        "args:1234",
    )
    assert only["expires"].endswith("Z")


def test_approvals_are_revoked_by_id_principal_or_tool(
    data: Store, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    a = data.grant_approval("alice", "restart_service", "restart", "api/prod", 3600)
    data.grant_approval("alice", "scale_service", "scale", "k", 3600)
    data.grant_approval("bob", "scale_service", "scale", "k", 3600)
    data.grant_approval("carol", "flush_cache", "flush", "k", 3600)
    where = ("--data-dir", str(tmp_path / "data"))

    assert host(capsys, "approvals", "revoke", a.id, *where)[:2] == (0, "")
    status, _, err = host(capsys, "approvals", "revoke", a.id, *where)
    assert status == 1 and "no approval" in err
    status, _, err = host(capsys, "approvals", "revoke", "--tool", "scale_service", *where)
    assert status == 0 and "Revoked 2 approvals" in err
    assert host(capsys, "approvals", "revoke", "--principal", "carol", *where)[0] == 0
    assert data.approvals() == []
    assert host(capsys, "approvals", "revoke", *where)[0] == 2


def _record(call: str, tool: str, principal: str, at: float, outcome: str) -> AuditRecord:
    return AuditRecord(
        call, at, principal, tool, outcome, arguments={"id": "T-1"},
        answers={"close": {"action": "decline"}} if outcome == "declined" else {},
        approvals=({"question": "close", "via": "remembered", "approval": "abc"},)
        if outcome == "acted" else (),
        acted=outcome == "acted", duration_s=0.012,
    )  # fmt: skip


def test_the_audit_trail_is_shown_filtered_newest_first(
    data: Store, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    now = time.time()
    data.write_audit(
        _record("c1", "close_ticket", "alice", now - 7200, "acted"), rank=ACTED, keep_s=9e6
    )
    data.write_audit(
        _record("c2", "close_ticket", "bob", now - 60, "declined"), rank=ENDED, keep_s=9e6
    )
    data.write_audit(
        _record("c3", "delete_ticket", "alice", now - 30, "error"), rank=ENDED, keep_s=9e6
    )
    where = ("--data-dir", str(tmp_path / "data"))

    status, out, _ = host(capsys, "audit", *where)
    lines = out.splitlines()
    assert status == 0 and [line.split()[2] for line in lines] == [
        "delete_ticket", "close_ticket", "close_ticket"
    ]  # fmt: skip
    assert lines[1].split()[1:5] == ["bob", "close_ticket", "declined", "12ms"]
    assert "answers: close=decline" in lines[1]
    assert "approvals: close (remembered)" in lines[2]

    _, out, _ = host(capsys, "audit", "--tool", "close_ticket", "--since", "1h", *where)
    assert len(out.splitlines()) == 1 and " bob " in out
    _, out, _ = host(
        capsys, "audit", "--principal", "alice", "--limit", "1", "--format", "json", *where
    )
    [record] = json.loads(out)
    assert record["id"] == "c3" and record["outcome"] == "error"
    assert set(record) >= {
        "time", "principal", "tool", "arguments", "answers", "approvals", "outcome",
        "incident", "duration_ms",
    }  # fmt: skip


def test_a_wrong_data_directory_is_said_not_created(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    status, _, err = host(capsys, "audit", "--data-dir", str(tmp_path / "nowhere"))
    assert status == 1 and "there is no store at" in err
    assert not (tmp_path / "nowhere").exists()
    status, _, err = host(capsys, "audit", "--limit", "0", "--data-dir", str(tmp_path))
    assert status == 2 and "--limit" in err
