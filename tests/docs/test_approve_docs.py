"""docs/approvals-for-authors.md: its example is the shipped one, and it runs as the page says."""

from __future__ import annotations

import http.client
import re
import sqlite3
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import pytest

from host.auth.tokenfile import create_token
from host.spec.check import check_project
from support.approvals import round_trip
from support.paths import ROOT
from support.servers import clean_env, host_serve

pytestmark = pytest.mark.served

PAGE = (ROOT / "docs" / "approvals-for-authors.md").read_text()
EXAMPLE = ROOT / "examples" / "change-control"


def test_the_pages_yaml_is_the_example() -> None:
    (block,) = [b for b in re.findall(r"```yaml\n(.*?)```", PAGE, re.S) if "approve:" in b]
    shipped = (EXAMPLE / "specs" / "ops.yaml").read_text()
    # NOTE: after the editor's schema line, up to the examples (testing-specs.md shows those)
    tool = shipped.split("\n", 1)[1].split("\nexamples:", 1)[0] + "\n"
    assert tool == block


def test_the_example_validates_with_auth_and_warns_without() -> None:
    specs = [EXAMPLE / "specs"]
    assert check_project(specs, auth=True).diagnostics == []
    warned = check_project(specs, auth=False).diagnostics
    assert [d.rule for d in warned] == ["approve-unprotected"]


def test_a_production_restart_waits_for_bob(tmp_path: Path) -> None:
    tokens = tmp_path / "tokens"
    alice = create_token(tokens, "alice", [])[0]
    bob = create_token(tokens, "bob", ["ops:approve"])[0]
    db = tmp_path / "ops.db"
    with host_serve(
        tmp_path, "host", specs=EXAMPLE / "specs", HOST_AUTH_TOKENS=str(tokens), OPS_DB=str(db)
    ) as server:
        results: list[dict[str, Any]] = []

        def call() -> None:
            conn = http.client.HTTPConnection("127.0.0.1", server.port, timeout=90)
            arguments = {"service": "web", "environment": "production"}
            asked = round_trip(conn, alice, "restart_service", arguments)
            yes = {"restart": {"action": "accept", "content": {"confirm": True}}}
            results.append(
                round_trip(conn, alice, "restart_service", arguments, inputResponses=yes,
                       requestState=asked["requestState"])
            )  # fmt: skip

        held = threading.Thread(target=call)
        held.start()
        request = ""
        for _ in range(200):
            listed = _cli("pending", "--format", "json", url=server.url, token=bob)
            if listed.returncode == 0 and listed.stdout.strip() not in ("", "[]"):
                request = re.findall(r'"id": "(apr_[^"]+)"', listed.stdout)[0]
                break
            threading.Event().wait(0.1)
        assert request, "no pending request"
        done = _cli("approve", request, "--reason", "checked the runbook", url=server.url,
                    token=bob)  # fmt: skip
        assert done.returncode == 0, done.stderr
        held.join(60)
    assert results[0]["structuredContent"] == {
        "restarted": "web", "environment": "production", "approved_by": ["bob"]
    }  # fmt: skip
    rows = sqlite3.connect(db).execute("SELECT service, caller, approved_by FROM restarts")
    assert rows.fetchall() == [("web", "alice", "bob")]


def _cli(*args: str, url: str, token: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "host", "approvals", *args, "--url", url],
        capture_output=True, text=True, env=clean_env(HOST_TOKEN=token), timeout=60,
    )  # fmt: skip


def test_host_serve_refuses_approve_steps_without_auth(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "host", "serve", "--specs", str(EXAMPLE / "specs")],
        capture_output=True, text=True, timeout=60,
        env=clean_env(HOST_DATA_DIR=str(tmp_path)),
    )  # fmt: skip
    assert done.returncode == 1
    assert "approve steps (restart_service)" in done.stderr
    assert "HOST_AUTH_TOKENS" in done.stderr
