"""The approve step in the machine alone: the gate's answer decides, the act runs only approved."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from host.machine import CallContext, NeedInput, Outcome, given
from host.machine.compile import compile_tool
from host.machine.gate import ApprovalAsk, Decided
from host.spec.model import Act, Approve, Confirm, Tool

HANDLERS = """
def restart(service, change, caller):
    return {"restarted": service, "by": change["approved_by"], "caller": caller}
"""


@dataclass
class FakeGate:
    status: str = "approved"
    asked: list[ApprovalAsk] = field(default_factory=list)

    def decide(self, ask: ApprovalAsk) -> Decided:
        self.asked.append(ask)
        return Decided(
            self.status,  # type: ignore[arg-type]
            "apr_1",
            ask.count,
            2_000_000_000.0,
            ask.approvers,
            ("bob",) if self.status == "approved" else (),
            "looks fine" if self.status != "rejected" else "not now",
        )


@pytest.fixture
def handlers(tmp_path: Path) -> Path:
    (tmp_path / "h.py").write_text(HANDLERS)
    return tmp_path


def _tool(**approve: Any) -> Tool:
    return Tool(
        name="restart_service",
        description="d",
        input={"properties": {"service": {"type": "string"}}, "required": ["service"]},
        steps=(
            Confirm("sure", "Restart {{ service }}?"),
            Approve(
                "change",
                "{{ caller }} asks to restart {{ service }}.",
                ("ops:approve",),
                **approve,
            ),
            Act("h:restart"),
        ),
    )


YES = {"sure": {"action": "accept", "content": {"confirm": True}}}


def test_the_act_runs_only_once_approved(handlers: Path) -> None:
    machine = compile_tool(_tool(), handlers)
    gate = FakeGate("approved")
    first = machine.run({"service": "web"}, given({}), CallContext(principal="alice", gate=gate))
    assert isinstance(first, NeedInput) and not gate.asked  # the caller's own yes comes first
    done = machine.run({"service": "web"}, given(YES), CallContext(principal="alice", gate=gate))
    assert isinstance(done, Outcome) and done.acted
    assert done.structured == {"restarted": "web", "by": ["bob"], "caller": "alice"}
    assert done.approval is not None and done.approval.request == "apr_1"
    (ask,) = gate.asked
    assert ask.message == "alice asks to restart web."
    assert ask.arguments == {"service": "web"}
    assert ask.answers == {
        "sure": {"action": "accept", "content": {"confirm": True}, "remembered": False}
    }


def test_pending_ends_with_a_tool_error_and_meta(handlers: Path) -> None:
    machine = compile_tool(_tool(), handlers)
    ctx = CallContext(principal="alice", gate=FakeGate("pending"))
    result = machine.run({"service": "web"}, given(YES), ctx)
    assert isinstance(result, Outcome) and result.is_error and not result.acted
    text = result.content[0]["text"]
    assert "Approval is pending" in text and "apr_1" in text and "ops:approve" in text
    assert "again with the same arguments" in text
    meta = result.to_result()["_meta"]["host/approval"]
    assert meta == {
        "request": "apr_1",
        "status": "pending",
        "needed": 1,
        "expires": "2033-05-18T03:33:20Z",  # ISO 8601 UTC, as every time shown
    }


@pytest.mark.parametrize("status", ["rejected", "expired"])
def test_rejected_and_expired_give_the_steps_results(handlers: Path, status: str) -> None:
    machine = compile_tool(
        _tool(
            rejected={"restarted": False, "reason": "{{ change.reason }}"},
            expired="Nobody decided.",
        ),
        handlers,
    )
    result = machine.run(
        {"service": "web"}, given(YES), CallContext(principal="alice", gate=FakeGate(status))
    )
    assert isinstance(result, Outcome) and not result.acted and result.ending == status
    if status == "rejected":
        assert result.structured == {"restarted": False, "reason": "not now"}
    else:
        assert result.content[0]["text"] == "Nobody decided."


def test_default_endings_say_nothing_was_done(handlers: Path) -> None:
    machine = compile_tool(_tool(), handlers)
    result = machine.run(
        {"service": "web"}, given(YES), CallContext(principal="a", gate=FakeGate("rejected"))
    )
    assert isinstance(result, Outcome)
    assert (
        "rejected" in result.content[0]["text"] and "Nothing was done" in result.content[0]["text"]
    )


def test_when_false_skips_the_approval(handlers: Path) -> None:
    machine = compile_tool(_tool(when="service == 'prod'"), handlers)
    gate = FakeGate("pending")
    result = machine.run({"service": "web"}, given(YES), CallContext(principal="a", gate=gate))
    assert isinstance(result, Outcome) and result.acted and not gate.asked


def test_without_a_gate_nothing_acts(handlers: Path) -> None:
    machine = compile_tool(_tool(), handlers)
    result = machine.run({"service": "web"}, given(YES), CallContext(principal="a"))
    assert isinstance(result, Outcome) and result.is_error and not result.acted


def test_the_definition_digest_follows_the_definition(handlers: Path) -> None:
    one = compile_tool(_tool(), handlers)
    same = compile_tool(_tool(), handlers)
    other = compile_tool(_tool(count=2), handlers)
    assert one.definition == same.definition
    assert one.definition != other.definition
