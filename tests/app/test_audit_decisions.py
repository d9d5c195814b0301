"""The record an act leaves if its worker dies names its approval request and every decision.

That record is written before the act runs (with its claim), as the chain's ``started`` entry:
here the act runs to its end, and the entry is read from the chain, where it stays.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from host.auth import AuthSettings
from host.spec import load_project
from host.store import open_store
from support.approvals import SPECS, SURE, make_tokens
from support.modern import Mcp, app_client


def test_the_record_of_an_act_about_to_run_names_its_request_and_approvers(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPS_ACTS", str(tmp_path / "acts.jsonl"))
    path, tokens = make_tokens(tmp_path)
    project = load_project(SPECS, SPECS.parent / "handlers")
    http = app_client(tmp_path, project, auth=AuthSettings(tokens_file=path))
    alice = Mcp(http, token=tokens["alice"])

    def final_round() -> dict[str, object]:
        first = alice.result(alice.call("rollback", {"service": "web"}))
        answered = alice.call("rollback", {"service": "web"}, responses=SURE,
                              state=first["requestState"])  # fmt: skip
        return dict(alice.result(answered))

    request = final_round()["_meta"]["host/approval"]["request"]  # type: ignore[index]
    headers = {"Authorization": f"Bearer {tokens['bob']}", "Content-Type": "application/json"}
    decided = http.simulate_post(f"/approvals/api/requests/{request}/approve", headers=headers,
                                 body=b'{"reason": "checked the dashboard"}')  # fmt: skip
    assert decided.status_code == 200, decided.text
    assert not final_round().get("isError")

    store = open_store(f"sqlite:///{tmp_path / 'data' / 'store.db'}")
    try:
        entries = [json.loads(body) for _, body, _ in store.audit_entries(limit=100)]
    finally:
        store.close()
    (started,) = [e for e in entries if e["kind"] == "started"]
    (used,) = [a for a in started["approvals"] if a.get("request") == request]
    (decision,) = used["decisions"]
    assert (decision["principal"], decision["verdict"]) == ("bob", "approve")
    assert decision["reason"] == "checked the dashboard" and decision["time"].endswith("Z")
    assert used["approved_by"] == ["bob"] and started["acted"] is True
