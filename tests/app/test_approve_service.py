"""The approvals service on its own: who may see and decide, voiding, the per-caller limit."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from host.approvals.service import ApprovalsService, InboxRequest
from host.auth.identity import Identity
from host.errors import Conflict, Forbidden, NotFound, ProtocolError
from host.machine.compile import compile_tool
from host.machine.gate import ApprovalAsk
from host.protocol.gate import StoreGate
from host.spec.model import Act, Approve, Tool
from host.store import Store, open_store

ALICE = Identity("alice", frozenset({"ops:approve"}))
BOB = Identity("bob", frozenset({"ops"}))
DAVE = Identity("dave", frozenset({"tickets"}))


@pytest.fixture
def store(tmp_path: Path) -> Iterator[Store]:
    opened = open_store(f"sqlite:///{tmp_path / 'store.db'}")
    yield opened
    opened.close()


def _machine(tmp_path: Path, message: str = "{{ caller }} asks.") -> object:
    (tmp_path / "h.py").write_text("def act(service):\n    return {'done': service}\n")
    tool = Tool(
        name="restart",
        description="d",
        input={"properties": {"service": {"type": "string"}}, "required": ["service"]},
        steps=(Approve("change", message, ("ops:approve",), wait_s=0.0), Act("h:act")),
        audit_redact=("service",),
    )
    return compile_tool(tool, tmp_path)


def _ask(service: str = "web") -> ApprovalAsk:
    return ApprovalAsk("change", "alice asks.", ("ops:approve",), 1, 0.0, 3600.0,
                       {"service": service})  # fmt: skip


def test_what_each_person_sees_and_may_decide(store: Store, tmp_path: Path) -> None:
    machine = _machine(tmp_path)
    decided = StoreGate(store, machine, "alice", "call-1").decide(_ask())  # type: ignore[arg-type]
    assert decided.status == "pending"
    service = ApprovalsService(store, {"restart": machine})  # type: ignore[dict-item]
    assert service.decidable(ALICE) == []  # her own
    (mine,) = service.decidable(BOB)
    assert isinstance(mine, InboxRequest) and mine.caller == "alice"
    assert mine.arguments == {"service": "[redacted]"} and mine.status == "pending"
    assert service.decidable(DAVE) == []
    with pytest.raises(Forbidden):
        service.get(DAVE, mine.id)
    assert service.get(ALICE, mine.id).id == mine.id
    with pytest.raises(NotFound):
        service.get(BOB, "apr_nope")
    with pytest.raises(Forbidden):
        service.decide(ALICE, mine.id, "approve", "")
    with pytest.raises(Forbidden):
        service.decide(DAVE, mine.id, "approve", "")
    done = service.decide(BOB, mine.id, "approve", "fine")
    assert done.status == "approved" and done.approved_by == ("bob",)
    (decision,) = done.decisions
    assert (decision.principal, decision.verdict, decision.reason) == ("bob", "approve", "fine")
    with pytest.raises(Conflict):
        service.decide(BOB, mine.id, "reject", "")
    assert [r.id for r in service.history(BOB)] == [mine.id]
    again = StoreGate(store, machine, "alice", "call-2").decide(_ask())  # type: ignore[arg-type]
    assert again.status == "approved" and again.request == mine.id


def test_a_changed_tool_voids_its_requests(store: Store, tmp_path: Path) -> None:
    old = _machine(tmp_path)
    first = StoreGate(store, old, "alice", "c").decide(_ask("db"))  # type: ignore[arg-type]
    new = _machine(tmp_path, "{{ caller }} asks, please.")
    service = ApprovalsService(store, {"restart": new})  # type: ignore[dict-item]
    assert service.get(BOB, first.request).status == "voided"
    with pytest.raises(Conflict):
        service.decide(BOB, first.request, "approve", "")
    fresh = StoreGate(store, new, "alice", "d").decide(_ask("db"))  # type: ignore[arg-type]
    assert fresh.request != first.request


def test_the_per_caller_limit_refuses_more_pending_requests(store: Store, tmp_path: Path) -> None:
    machine = _machine(tmp_path)
    gate = StoreGate(store, machine, "alice", "c", limit=2)  # type: ignore[arg-type]
    gate.decide(_ask("a"))
    gate.decide(_ask("b"))
    gate.decide(_ask("a"))  # the same request again is no new one
    with pytest.raises(ProtocolError) as refused:
        gate.decide(_ask("c"))
    assert refused.value.http_status == 429 and refused.value.data["limit"] == "pending_approvals"
    anonymous = StoreGate(store, machine, "anonymous", "c", limit=1)  # type: ignore[arg-type]
    for name in "xyz":
        anonymous.decide(_ask(name))


def test_a_jwt_named_like_the_caller_is_not_the_caller(store: Store, tmp_path: Path) -> None:
    # NOTE: one name per person: the static token alice made the request; a JWT whose sub is
    # alice (her token revoked, say) is someone else: not shown her request as its caller, and
    # not refused as its caller either when she holds an approver scope.
    machine = _machine(tmp_path)
    made = StoreGate(store, machine, ALICE.owner, "call-1").decide(_ask())  # type: ignore[arg-type]
    service = ApprovalsService(store, {"restart": machine})  # type: ignore[dict-item]
    assert made.request is not None
    impostor = Identity("alice", frozenset({"tickets"}), method="jwt")
    with pytest.raises(Forbidden):
        service.get(impostor, made.request)
    assert service.history(impostor) == [] and service.decidable(impostor) == []
    approver = Identity("alice", frozenset({"ops:approve"}), method="jwt")
    assert [r.id for r in service.decidable(approver)] == [made.request]
    assert service.decidable(ALICE) == []  # the caller herself still may not


def test_a_failing_hook_never_fails_a_recorded_decision_and_a_retry_is_told_once(
    store: Store, tmp_path: Path
) -> None:
    machine = _machine(tmp_path)
    made = StoreGate(store, machine, "alice", "c").decide(_ask("hooked"))  # type: ignore[arg-type]
    told: list[str] = []

    def full_disk(status: str, request: object) -> None:
        told.append(status)
        raise OSError(28, "No space left on device")  # the metrics' files, say

    service = ApprovalsService(store, {"restart": machine}, decided=full_disk)  # type: ignore[dict-item]
    done = service.decide(BOB, made.request, "approve", "ok")
    assert done.status == "approved" and done.approved_by == ("bob",)
    again = service.decide(BOB, made.request, "approve", "ok")  # its answer was lost: a retry
    assert again.approved_by == ("bob",) and len(again.decisions) == 1
    assert told == ["approved"]  # told once, when it was recorded
