"""The test kit decides approval requests as another person would, through the host's own rules.

``mcp.approvals.pending/approve/reject``, ``mcp.on_approval`` and ``tools.call(approvals=...)``
call the approvals service's one decision function, so nobody approves their own request and an
approver holds one of the step's scopes; a pending request ends the call at once in tests. Spec
examples take ``approvals:`` and ``expect: {pending: STEP}``, run by ``host test``.
"""

from __future__ import annotations

import io
import json
import shutil
import time
from pathlib import Path
from typing import Any

import pytest

from host.errors import SpecError
from host.spec import load_project
from host.testing import ApprovalRefused, McpClient, serve
from host.testing.runner import cases, run_cases
from support.paths import FIXTURES

FIXTURE = FIXTURES / "approve"
YES = {"action": "accept", "content": {"confirm": True}}


@pytest.fixture
def host_specs() -> Path:
    return FIXTURE / "specs"


def acts(data_dir: Path) -> list[dict[str, Any]]:
    path = data_dir / "acts.jsonl"
    return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []


def test_a_pending_request_ends_the_call_at_once(mcp: McpClient, host_data_dir: Path) -> None:
    started = time.monotonic()
    result = mcp.tools.call("restart_service", {"service": "api"}, answers={"sure": YES})
    assert time.monotonic() - started < 10  # the step says `wait: 30s`

    assert result.is_error and "Approval is pending" in result.text()
    [request] = mcp.approvals.pending()
    assert request["step"] == "change" and request["caller"] == "anonymous"
    assert request["approvers"] == ["ops:approve"] and acts(host_data_dir) == []


def test_on_approval_decides_every_call_in_one_line(mcp: McpClient, host_data_dir: Path) -> None:
    mcp.on_elicitation({"sure": YES})
    mcp.on_approval("approve", by="carol")

    result = mcp.tools.call("restart_service", {"service": "api"})

    assert result.json() == {"restarted": "api", "approved_by": ["carol"]}
    assert result.asked == ["sure"]  # the caller was asked once
    assert [a["approved_by"] for a in acts(host_data_dir)] == [["carol"]]
    assert mcp.approvals.requests()[0]["status"] == "approved"

    mcp.on_approval(None)
    assert mcp.tools.call("restart_service", {"service": "db"}).is_error  # pending again


def test_a_rejection_carries_its_reason(mcp: McpClient, host_data_dir: Path) -> None:
    mcp.on_approval("reject", by="carol", reason="Not during the sale.")
    result = mcp.tools.call("rollback", {"service": "api"}, answers={"sure": YES})

    assert result.json() == {"done": False, "reason": "Not during the sale."}
    assert acts(host_data_dir) == []
    decided = mcp.approvals.requests()[0]
    assert decided["status"] == "rejected"
    assert decided["decisions"][0]["principal"] == "carol"


def test_one_call_decides_for_itself_over_on_approval(mcp: McpClient) -> None:
    mcp.on_approval("reject", by="carol")
    result = mcp.tools.call(
        "rollback",
        {"service": "api"},
        answers={"sure": YES},
        approvals={"change": {"decision": "approve", "by": "erin"}},
    )
    assert result.json()["approved_by"] == ["erin"]


def test_two_approvers_decide_in_turn_and_a_function_sees_the_request(mcp: McpClient) -> None:
    seen: list[dict[str, Any]] = []

    def decide(request: dict[str, Any]) -> Any:
        seen.append(request)
        return {"decision": "approve", "by": ["carol", "erin"]}

    result = mcp.tools.call(
        "delete_database", {"service": "db"}, answers={"sure": YES}, approvals=decide
    )

    assert result.json()["approved_by"] == ["carol", "erin"]
    assert seen[0]["needed"] == 2 and seen[0]["message"] == "anonymous asks to delete_database db."
    # One approver where two are needed: the request stays pending, the call says so.
    half = mcp.tools.call("delete_database", {"service": "x"}, answers={"sure": YES},
                          approvals="approve")  # fmt: skip
    assert half.is_error and mcp.approvals.pending()[0]["approved_by"] == ["approver"]


def test_nobody_decides_their_own_request(mcp: McpClient) -> None:
    alice = mcp.client(principal="alice", scopes=["ops:approve"])
    with pytest.raises(ApprovalRefused, match="nobody approves their own") as refused:
        alice.tools.call("rollback", {"service": "api"}, answers={"sure": YES},
                         approvals={"decision": "approve", "by": "alice"})  # fmt: skip
    assert refused.value.status == 403
    assert mcp.approvals.pending(by="alice") == []  # hers: not hers to decide
    assert len(mcp.approvals.pending(by="bob")) == 1


def test_an_approver_needs_one_of_the_steps_scopes(mcp: McpClient) -> None:
    mcp.client(principal="dave", scopes=["tickets"])
    mcp.tools.call("rollback", {"service": "api"}, answers={"sure": YES})

    with pytest.raises(ApprovalRefused, match="dave holds none of ops:approve") as refused:
        mcp.approvals.approve("latest", by="dave")
    assert refused.value.status == 403
    assert mcp.approvals.pending(by="dave") == []
    # A scope above ops:approve holds it (hierarchical on ':').
    mcp.client(principal="olga", scopes=["ops"])
    assert mcp.approvals.approve(by="olga")["status"] == "approved"


def test_a_decided_request_cannot_be_decided_again(mcp: McpClient) -> None:
    mcp.tools.call("rollback", {"service": "api"}, answers={"sure": YES})
    request = mcp.approvals.pending()[0]["id"]
    mcp.approvals.reject(request, by="carol", reason="no")

    with pytest.raises(ApprovalRefused) as refused:
        mcp.approvals.approve(request, by="erin")
    assert refused.value.status == 409
    with pytest.raises(LookupError, match="no approval request is pending"):
        mcp.approvals.approve("latest")
    with pytest.raises(ApprovalRefused) as missing:
        mcp.approvals.approve("apr_nothing")
    assert missing.value.status == 404


def test_unreadable_decisions_say_what_is_accepted(mcp: McpClient) -> None:
    with pytest.raises(ValueError, match="'approve' or 'reject'"):
        mcp.on_approval("yes")
    with pytest.raises(ValueError, match="decision, by and reason"):
        mcp.tools.call("rollback", {"service": "a"}, answers={"sure": YES},
                       approvals={"decision": "approve", "who": "x"})  # fmt: skip


def test_a_granted_yes_carries_the_definition_and_a_reload_voids_it(tmp_path: Path) -> None:
    specs = tmp_path / "specs"
    shutil.copytree(FIXTURES / "approvals" / "specs", specs)
    shutil.copytree(FIXTURES / "approvals" / "handlers", tmp_path / "handlers")
    data = tmp_path / "data"
    args = {"service": "web", "replicas": 2}
    with serve(specs, data_dir=data) as mcp:
        mcp.approvals.grant("scale_service", "scale", arguments=args)
        assert mcp.tools.call("scale_service", args).asked == []
    spec = specs / "ops.yaml"
    spec.write_text(
        spec.read_text().replace("Scale {{ service }}", "Scale the service {{ service }}")
    )
    with serve(specs, data_dir=data) as mcp:  # a reload that changed the tool's confirm
        assert mcp.tools.call("scale_service", args, answers={"scale": YES}).asked == ["scale"]


EXAMPLES = """
examples:
  - name: approved
    arguments: {service: api}
    answers: {sure: {action: accept, content: {confirm: true}}}
    approvals: {change: {decision: approve, by: carol}}
    expect: {result: {restarted: api, approved_by: [carol]}}
  - name: rejected
    arguments: {service: api}
    answers: {sure: {action: accept, content: {confirm: true}}}
    approvals: {change: {decision: reject, by: carol, reason: later}}
    expect: {result: {done: false, reason: later}}
  - name: left pending
    arguments: {service: api}
    answers: {sure: {action: accept, content: {confirm: true}}}
    expect: {pending: change}
  - name: wrongly expected to act
    arguments: {service: api}
    answers: {sure: {action: accept, content: {confirm: true}}}
    expect: {result: {restarted: api}}
  - name: decided by its own caller
    arguments: {service: api}
    answers: {sure: {action: accept, content: {confirm: true}}}
    approvals: {change: {decision: approve, by: anonymous}}
    expect: {result: {restarted: api}}
"""


def _with_examples(tmp_path: Path, examples: str) -> Path:
    shutil.copytree(FIXTURE, tmp_path / "fx")
    spec = tmp_path / "fx" / "specs" / "ops.yaml"
    text = spec.read_text()
    at = text.index("---\nkind: tool\nname: rollback")
    spec.write_text(text[:at] + examples.lstrip("\n") + text[at:])
    return tmp_path / "fx" / "specs"


def test_host_test_runs_examples_with_approvals(tmp_path: Path) -> None:
    specs = _with_examples(tmp_path, EXAMPLES)
    project = load_project(specs, specs.parent / "handlers")
    out = io.StringIO()

    summary = run_cases(project, specs, None, cases(project), out)

    text = out.getvalue()
    assert (summary.passed, summary.failed) == (3, 2), text
    assert "stopped at approve step 'change', undecided" in text
    assert "nobody approves their own request" in text


def test_the_validator_checks_that_approvals_name_approve_steps(tmp_path: Path) -> None:
    specs = _with_examples(tmp_path, """
examples:
  - name: misnamed
    arguments: {service: api}
    approvals: {chnage: {decision: approve}, sure: {decision: reject}}
    expect: {pending: sure}
""")  # fmt: skip
    with pytest.raises(SpecError) as found:
        load_project(specs, specs.parent / "handlers")
    messages = [d.message for d in found.value.diagnostics if d.rule == "example"]
    assert len(messages) == 3, messages
    assert "decides 'chnage', which is not an approve step" in messages[0]
    assert "Did you mean 'change'" in messages[0]
    assert "leaves pending 'sure'" in messages[2]
