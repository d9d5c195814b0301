"""``host diff``: what a spec change does to each tool, and what a reload voids, before it is made.

Directory pairs and git revisions; each kind of change, named down to the field; definition
digests; the counts of what a reload voids against a real store file; text, JSON and markdown;
the exit codes (0 nothing a caller sees, 1 something, 2 an error). It writes nothing.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest

from host.cli import main
from host.machine.definition import definition_digest
from host.protocol.approvals import StoreApprovals
from host.spec import load_project
from host.store import open_store
from host.store.requests import ApprovalRequest, new_request_id

SERVER = "kind: server\nname: ops\nversion: 1.0.0\nelicitation: {enabled: true}\n"

TOOL = """\
kind: tool
name: restart_service
description: Restart a service.
annotations: {destructiveHint: true}
scopes: [ops]
audit: {redact: [ticket]}
input:
  properties:
    service: {type: string}
    ticket: {type: string}
  required: [service]
steps:
  - ask: why
    message: Why restart {{ service }}?
    form:
      reason: {type: string}
  - confirm: go
    message: Restart {{ service }}?
    remember: {for: 8h, key: "{{ service }}"}
  - approve: change
    message: "{{ caller }} asks to restart {{ service }}."
    approvers: [ops:approve]
    count: 1
  - act: ops:restart
    timeout: 30s
    lock: [service]
    lock_wait: 10s
"""

OTHER = """\
kind: tool
name: status
description: Read a service's status.
annotations: {readOnlyHint: true}
input:
  properties:
    service: {type: string}
  required: [service]
steps:
  - read: status
    call: ops:status
"""

HANDLERS = """\
def restart(service, why=None, go=None, change=None):
    return {"restarted": service}


def status(service):
    return {"service": service}
"""


def project(root: Path, tool: str = TOOL, *, other: bool = True) -> Path:
    """A spec directory (and handlers beside it) under ``root``."""
    specs = root / "specs"
    shutil.rmtree(root, ignore_errors=True)
    specs.mkdir(parents=True)
    (root / "handlers").mkdir()
    (root / "handlers" / "ops.py").write_text(HANDLERS)
    (specs / "server.yaml").write_text(SERVER)
    (specs / "ops.yaml").write_text(tool + ("---\n" + OTHER if other else ""))
    return specs


def host(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    status = main(["diff", *argv, "--no-store"] if "--data-dir" not in argv else ["diff", *argv])
    out, err = capsys.readouterr()
    return status, out, err


def as_json(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, dict[str, Any]]:
    status, out, _ = host(capsys, *argv, "--format", "json")
    return status, json.loads(out)


CHANGES = [
    # (what is replaced, by what, the aspect named, the field's path, digest changed)
    ("    ticket: {type: string}\n", "    ticket: {type: integer}\n", "input schema",
     "properties.ticket.type", True),
    ("Why restart", "Why on earth restart", "questions", "why.message", True),
    ("      reason: {type: string}", "      reason: {type: string, maxLength: 80}", "questions",
     "why.fields.reason.schema.maxLength", True),
    ("    message: Restart {{ service }}?", "    message: Restart {{ service }} now?", "confirm",
     "go.message", True),
    ("    count: 1", "    count: 2", "approve", "change.count", True),
    ("    timeout: 30s", "    timeout: 40s", "act", "timeout_s", True),
    ("    lock_wait: 10s", "    lock_wait: 5s", "lock", "lock_wait", True),
    ("for: 8h", "for: 4h", "remember", "go.for_s", True),
    ("scopes: [ops]", "scopes: [ops, ops:admin]", "scopes", "", False),
    ("{destructiveHint: true}", "{destructiveHint: true, idempotentHint: true}", "annotations",
     "idempotentHint", False),
    ("description: Restart a service.", "description: Restart one service.", "description", "",
     False),
]  # fmt: skip


@pytest.mark.parametrize(("old", "new", "aspect", "path", "digest"), CHANGES)
def test_each_kind_of_change_is_named_to_its_field(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    old: str,
    new: str,
    aspect: str,
    path: str,
    digest: bool,
) -> None:
    assert old in TOOL
    before = project(tmp_path / "a")
    after = project(tmp_path / "b", TOOL.replace(old, new))

    status, out = as_json(capsys, str(before), str(after))

    assert status == 1 and out["changed"] is True
    [tool] = out["tools"]
    assert (tool["name"], tool["status"], tool["aspects"]) == (
        "restart_service",
        "changed",
        [aspect],
    )
    assert [c["path"] for c in tool["changes"]] == [path]
    assert tool["definition"]["changed"] is digest
    assert (tool["definition"]["old"] == tool["definition"]["new"]) is not digest


def test_added_removed_and_unchanged(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    both = project(tmp_path / "a")
    one = project(tmp_path / "b", other=False)
    renamed = project(tmp_path / "c", OTHER.replace("name: status", "name: health"), other=False)

    status, out = as_json(capsys, str(both), str(one))
    assert status == 1
    assert [(t["name"], t["status"]) for t in out["tools"]] == [("status", "removed")]
    status, out = as_json(capsys, str(one), str(both))
    assert [(t["name"], t["status"]) for t in out["tools"]] == [("status", "added")]
    assert out["tools"][0]["definition"]["old"] is None
    status, out = as_json(capsys, str(one), str(renamed))
    assert [(t["name"], t["status"]) for t in out["tools"]] == [
        ("health", "added"),
        ("restart_service", "removed"),
    ]
    # Comments and moved keys change nothing a caller sees.
    moved = project(tmp_path / "d", "# the restart tool\n" + TOOL.replace(
        "scopes: [ops]\naudit: {redact: [ticket]}\n", "audit: {redact: [ticket]}\nscopes: [ops]\n"
    ))  # fmt: skip
    status, text, _ = host(capsys, str(both), str(moved))
    assert status == 0 and "Nothing a caller sees changed." in text


def test_what_only_the_audit_trail_sees_exits_0(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    before = project(tmp_path / "a")
    after = project(tmp_path / "b", TOOL.replace("redact: [ticket]", "redact: []"))
    status, out = as_json(capsys, str(before), str(after))
    assert status == 0 and out["changed"] is False
    assert out["tools"][0]["aspects"] == ["audit"] and out["tools"][0]["caller_sees"] is False


def test_a_server_change_is_shown(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    before = project(tmp_path / "a")
    after = project(tmp_path / "b")
    (after / "server.yaml").write_text(SERVER + "instructions: Ops tools.\n")
    status, text, _ = host(capsys, str(before), str(after))
    assert status == 1 and 'server   instructions: (none) → "Ops tools."' in text


def _request(tool: str, definition: str, **changes: Any) -> ApprovalRequest:
    now = time.time()
    request = ApprovalRequest(
        id=new_request_id(), binding=new_request_id(), caller="alice", tool=tool, step="change",
        message="m", approvers=("ops:approve",), needed=1, arguments={}, answers={},
        definition=definition, created=now, expires=now + 3600,
    )  # fmt: skip
    return request.changed(**changes) if changes else request


def test_a_reload_voids_what_the_store_holds_under_the_old_digest(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    before = project(tmp_path / "a")
    after = project(tmp_path / "b", TOOL.replace("count: 1", "count: 2"))
    [tool] = [t for t in load_project(before).tools if t.name == "restart_service"]
    old = definition_digest(tool)
    data = tmp_path / "data"
    store = open_store(f"sqlite:///{data / 'store.db'}")
    for who in ("alice", "bob", "carol"):
        StoreApprovals(store, who, "restart_service", old).remember("go", "web", 3600)
    StoreApprovals(store, "dave", "restart_service", "an-older-one").remember("go", "web", 3600)
    store.grant_approval("erin", "restart_service", "go", "web", 3600)  # no digest: counts nowhere
    store.open_request(_request("restart_service", old))
    store.open_request(_request("restart_service", old, state="approved"))
    store.open_request(_request("restart_service", old, state="approved", spent_by="call-1"))
    store.open_request(_request("restart_service", "an-older-one"))
    store.open_request(_request("status", old))
    store.close()
    size = (data / "store.db").stat().st_size

    status, text, _ = host(capsys, str(before), str(after), "--data-dir", str(data))

    assert status == 1
    assert (
        "a reload voids 3 remembered approvals, 1 pending request and 1 approved request not yet "
        "acted on of restart_service"
    ) in text
    status, out = as_json(capsys, str(before), str(after), "--data-dir", str(data))
    assert out["tools"][0]["voids"] == {
        "remembered_approvals": 3, "pending_requests": 1, "approved_requests": 1,
    }  # fmt: skip
    assert out["store"].endswith("store.db")
    assert (data / "store.db").stat().st_size == size


def test_markdown_for_a_pull_request(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    before = project(tmp_path / "a")
    after = project(tmp_path / "b", TOOL.replace("count: 1", "count: 2"), other=False)
    status, out, _ = host(capsys, str(before), str(after), "--format", "markdown")
    assert status == 1
    assert out.startswith("### Spec changes: `")
    assert "| `restart_service` | changed | approve | changed | a reload ends its calls" in out
    assert "| `status` | removed | — | changed |" in out
    assert "- `approve.change.count`: `1` → `2`" in out and "</details>" in out


def test_errors_exit_2_and_nothing_is_created(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("HOST_DATA_DIR", raising=False)
    monkeypatch.delenv("HOST_STORE", raising=False)
    good = project(tmp_path / "a")
    status, _, err = host(capsys, str(good), str(tmp_path / "missing"))
    assert status == 2 and "missing: no such spec directory" in err
    broken = project(tmp_path / "b", TOOL.replace("count: 1", "count: many"))
    status, _, err = host(capsys, str(good), str(broken))
    assert status == 2 and "have errors" in err and "count" in err
    status, _, err = host(capsys, str(good))
    assert status == 2 and "give two spec directories" in err
    # With the configured store (none here), nothing is counted and nothing created.
    changed = project(tmp_path / "c", TOOL.replace("count: 1", "count: 2"))
    assert main(["diff", str(good), str(changed)]) == 1
    assert "nothing counted" in capsys.readouterr().out
    assert not (tmp_path / ".host").exists()
    status, _, err = host(capsys, str(good), str(changed), "--data-dir", str(tmp_path / "nodata"))
    assert status == 2 and "there is no store" in err


def _git(repo: Path, *args: str) -> None:
    env = {**os.environ, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@example.org",
           "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@example.org"}  # fmt: skip
    subprocess.run(["git", *args], cwd=repo, check=True, capture_output=True, env=env)


def test_two_git_revisions(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    repo = tmp_path / "repo"
    specs = project(repo)
    _git(repo, "init", "-q")
    _git(repo, "add", "-A")
    _git(repo, "commit", "-qm", "one")
    (specs / "ops.yaml").write_text(TOOL.replace("count: 1", "count: 2"))
    _git(repo, "commit", "-qam", "two")
    (specs / "ops.yaml").write_text("not: [what, was, committed")  # the work tree is not read
    monkeypatch.chdir(repo)

    status, out = as_json(capsys, "HEAD~1..HEAD")
    assert status == 1
    assert [(t["name"], t["status"], t["aspects"]) for t in out["tools"]] == [
        ("restart_service", "changed", ["approve"]),
        ("status", "removed", []),
    ]
    assert (out["old"], out["new"]) == ("specs@HEAD~1", "specs@HEAD")
    status, _, _ = host(capsys, "HEAD..")
    assert status == 0
    status, _, err = host(capsys, "nope..HEAD")
    assert status == 2 and "'nope' is not a revision" in err
    status, _, err = host(capsys, "HEAD~1..HEAD", "--specs", "elsewhere")
    assert status == 2 and "has no elsewhere" in err
    assert (specs / "ops.yaml").read_text() == "not: [what, was, committed"
