"""Attacks on requestState through the real app: each gets one fixed error and changes nothing."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest

from host.auth import AuthSettings
from host.auth.tokenfile import create_token
from support.modern import Mcp, app_client, make_client

CONFIRM = {"action": "accept", "content": {"confirm": True}}
INVALID = {"code": -32602, "message": "Invalid or expired requestState"}


@pytest.fixture
def mcp(tmp_path: Path, db: Path) -> Mcp:
    return make_client(tmp_path)


def first_round(mcp: Mcp, tool: str = "close_ticket", ticket: str = "T-1") -> str:
    result = mcp.result(mcp.call(tool, {"id": ticket}))
    assert result["resultType"] == "input_required"
    state: str = result["requestState"]
    return state


def assert_invalid(mcp: Mcp, response: Any) -> None:
    assert response.status_code == 400, response.text
    assert response.json["error"] == INVALID
    assert mcp.outbox() == []


def close_with(mcp: Mcp, state: Any, ticket: str = "T-1", tool: str = "close_ticket") -> Any:
    return mcp.call(
        tool, {"id": ticket}, responses={"close": CONFIRM, "delete": CONFIRM}, state=state
    )


def test_a_tampered_state_is_rejected_and_logged(
    mcp: Mcp, caplog: pytest.LogCaptureFixture
) -> None:
    state = first_round(mcp)
    middle = len(state) // 2
    tampered = state[:middle] + ("A" if state[middle] != "A" else "B") + state[middle + 1 :]
    assert_invalid(mcp, close_with(mcp, tampered))
    warnings = [r for r in caplog.records if r.levelname == "WARNING"]
    assert any(r.getMessage() == "requestState rejected" for r in warnings)


@pytest.mark.parametrize(
    "garbage", ["", "garbage", "eyJ2IjoxfQ.abc", 7, ["x"], {"state": "x"}, "x" * 70_000]
)
def test_garbage_is_rejected(mcp: Mcp, garbage: Any) -> None:
    assert_invalid(mcp, close_with(mcp, garbage))


def test_a_state_for_another_tool_is_rejected(mcp: Mcp, db: Path) -> None:
    state = first_round(mcp, "close_ticket", "T-1")
    assert_invalid(mcp, close_with(mcp, state, "T-1", tool="delete_ticket"))


def test_a_state_for_other_arguments_is_rejected(mcp: Mcp) -> None:
    state = first_round(mcp, "close_ticket", "T-1")
    assert_invalid(mcp, close_with(mcp, state, "T-2"))


def test_a_state_for_another_caller_is_rejected(tmp_path: Path, db: Path) -> None:
    tokens = tmp_path / "tokens"
    alice, _ = create_token(tokens, "alice", [])
    mallory, _ = create_token(tokens, "mallory", [])
    http = app_client(tmp_path, auth=AuthSettings(tokens_file=tokens))
    state = first_round(Mcp(http, token=alice))
    assert_invalid(Mcp(http, token=mallory), close_with(Mcp(http, token=mallory), state))
    done = Mcp(http, token=alice).result(close_with(Mcp(http, token=alice), state))
    assert done["structuredContent"]["closed"] is True


def test_an_expired_state_is_rejected(tmp_path: Path, db: Path) -> None:
    mcp = make_client(tmp_path, state_ttl_s=0.3)
    state = first_round(mcp)
    time.sleep(0.5)  # the scenario: the state (0.3 s) expires
    assert_invalid(mcp, close_with(mcp, state))


def test_a_state_from_a_server_with_another_key_is_rejected(tmp_path: Path, db: Path) -> None:
    other = make_client(tmp_path, secrets=("someone-else-0123456789abcdef0123456789abcdef",))
    state = first_round(other)
    assert_invalid(make_client(tmp_path), close_with(make_client(tmp_path), state))


def test_key_rotation(tmp_path: Path, db: Path) -> None:
    old = make_client(tmp_path, secrets=("old-0123456789abcdef0123456789abcdef",))
    rotating = make_client(
        tmp_path,
        secrets=("new-0123456789abcdef0123456789abcdef", "old-0123456789abcdef0123456789abcdef"),
    )
    new = make_client(tmp_path, secrets=("new-0123456789abcdef0123456789abcdef",))

    # A call started before the rotation finishes on a worker that has the new key first.
    state = first_round(old, ticket="T-1")
    done = rotating.result(close_with(rotating, state, "T-1"))
    assert done["structuredContent"] == {"id": "T-1", "closed": True}

    # States minted during the rotation are signed with the new key ...
    state = first_round(rotating, ticket="T-2")
    done = new.result(close_with(new, state, "T-2"))
    assert done["structuredContent"] == {"id": "T-2", "closed": True}

    # ... and once the old key is retired, its states no longer open.
    state = first_round(old, ticket="T-3")
    response = close_with(new, state, "T-3")
    assert response.status_code == 400
    assert response.json["error"] == INVALID
    assert len(new.outbox()) == 2


def test_a_state_is_not_reusable_for_a_second_act(mcp: Mcp) -> None:
    state = first_round(mcp)
    first = mcp.result(close_with(mcp, state))
    second = mcp.result(close_with(mcp, state))
    assert first == second
    assert len(mcp.outbox()) == 1


def test_every_failure_looks_the_same(mcp: Mcp) -> None:
    state = first_round(mcp)
    errors = [
        close_with(mcp, state + "x").json["error"],
        close_with(mcp, state, "T-2").json["error"],
        close_with(mcp, "garbage").json["error"],
    ]
    assert errors == [INVALID, INVALID, INVALID]
