"""The change-control tools under test: the approval path decided in one line, in seconds.

Run with ``pytest`` in this folder (``pytest.ini`` names the specs). The ``mcp`` fixture serves
``specs/`` in-process with fresh data for each test; ``mcp.approvals`` decides requests as another
person would, through the host's own rules: nobody approves their own request, and an approver
holds one of the step's ``approvers`` scopes.
"""

from __future__ import annotations

import sqlite3
import time
from pathlib import Path

import pytest

from host.testing import ApprovalRefused, McpClient

YES = {"action": "accept", "content": {"confirm": True}}
PROD = {"service": "web", "environment": "production"}


def restarts(data_dir: Path) -> list[tuple[str, str, str]]:
    """What the handler restarted: (service, environment, approved by)."""
    with sqlite3.connect(data_dir / "ops.db") as conn:
        return list(conn.execute("SELECT service, environment, approved_by FROM restarts"))


def test_staging_needs_only_the_callers_yes(mcp: McpClient, host_data_dir: Path) -> None:
    result = mcp.tools.call("restart_service", {"service": "web"}, answers={"restart": YES})

    assert result.json() == {"restarted": "web", "environment": "staging", "approved_by": []}
    assert mcp.approvals.pending() == []
    assert restarts(host_data_dir) == [("web", "staging", "")]


def test_production_restarts_once_an_operator_approves(mcp: McpClient, host_data_dir: Path) -> None:
    mcp.on_elicitation({"restart": YES})
    mcp.on_approval("approve", by="carol")

    result = mcp.tools.call("restart_service", PROD)

    assert result.json()["approved_by"] == ["carol"]
    assert restarts(host_data_dir) == [("web", "production", "carol")]
    assert mcp.audit.last().outcome == "acted"


def test_a_rejection_says_why_and_nothing_restarts(mcp: McpClient, host_data_dir: Path) -> None:
    result = mcp.tools.call(
        "restart_service",
        PROD,
        answers={"restart": YES},
        approvals={"decision": "reject", "by": "carol", "reason": "Freeze until Monday."},
    )

    assert result.json() == {"restarted": False, "reason": "Freeze until Monday."}
    assert not (host_data_dir / "ops.db").exists()


def test_an_undecided_request_is_pending_at_once_then_approved(
    mcp: McpClient, host_data_dir: Path
) -> None:
    started = time.monotonic()
    first = mcp.tools.call("restart_service", PROD, answers={"restart": YES})
    assert time.monotonic() - started < 10  # the step's `wait: 1m` is not waited in tests
    assert first.is_error and "Approval is pending" in first.text()
    [request] = mcp.approvals.pending()
    assert request["caller"] == "anonymous" and request["step"] == "change"

    mcp.approvals.approve(request["id"], by="carol", reason="Go ahead.")
    again = mcp.tools.call("restart_service", PROD, answers={"restart": YES})

    assert again.json()["approved_by"] == ["carol"]
    assert restarts(host_data_dir) == [("web", "production", "carol")]


def test_nobody_approves_their_own_request(mcp: McpClient) -> None:
    alice = mcp.client(principal="alice", scopes=["ops:approve"])
    alice.tools.call("restart_service", PROD, answers={"restart": YES})

    with pytest.raises(ApprovalRefused, match="nobody approves their own request") as refused:
        mcp.approvals.approve("latest", by="alice")
    assert refused.value.status == 403
    assert mcp.approvals.pending()[0]["status"] == "pending"


def test_an_approver_needs_an_approver_scope(mcp: McpClient, host_data_dir: Path) -> None:
    mcp.client(principal="dave", scopes=["ops:read"])  # dave holds only ops:read

    with pytest.raises(ApprovalRefused, match="holds none of ops:approve"):
        mcp.tools.call(
            "restart_service",
            PROD,
            answers={"restart": YES},
            approvals={"decision": "approve", "by": "dave"},
        )
    assert not (host_data_dir / "ops.db").exists()
