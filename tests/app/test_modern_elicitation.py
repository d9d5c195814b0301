"""The seed tutorial's behaviours for 2026-07-28 clients, end to end through the WSGI app."""

from __future__ import annotations

import dataclasses
import sqlite3
from pathlib import Path
from typing import Any

import pytest
from mcp_types._v2026_07_28 import CallToolResult, InputRequiredResult

from support.helpdesk import HELPDESK, NOT_CONFIRMED, ticket
from support.modern import Mcp, accept, make_client, reply

CONFIRM = {"confirm": True}


@pytest.fixture
def mcp(tmp_path: Path, db: Path) -> Mcp:
    return make_client(tmp_path)


def test_close_ticket_asks_about_the_ticket_with_a_checkbox_form(mcp: Mcp) -> None:
    result = mcp.result(mcp.call("close_ticket", {"id": "T-1"}))
    InputRequiredResult.model_validate(result)
    assert result["resultType"] == "input_required"
    assert result["_meta"]["io.modelcontextprotocol/serverInfo"] == {
        "name": "help-desk",
        "version": "1.0.0",
    }
    (key,) = result["inputRequests"]
    request = result["inputRequests"][key]
    assert request["method"] == "elicitation/create"
    params = request["params"]
    assert params["mode"] == "form"
    assert "T-1" in params["message"] and "Cannot log in" in params["message"]
    schema = params["requestedSchema"]
    assert schema["type"] == "object"
    assert schema["properties"]["confirm"]["type"] == "boolean"
    assert schema["properties"]["confirm"]["description"] == "Tick to close the ticket"
    assert schema["required"] == ["confirm"]
    assert isinstance(result["requestState"], str) and len(result["requestState"]) < 1024


def test_close_ticket_accepted_closes_and_sends_exactly_one_email(mcp: Mcp, db: Path) -> None:
    result, asked = mcp.run("close_ticket", {"id": "T-1"}, accept(CONFIRM))
    CallToolResult.model_validate(result)
    assert len(asked) == 1
    assert result["resultType"] == "complete"
    assert result["structuredContent"] == {"id": "T-1", "closed": True}
    assert "isError" not in result
    assert result["_meta"]["io.modelcontextprotocol/serverInfo"]["name"] == "help-desk"
    assert [e for e in mcp.outbox() if "T-1" in e] == [
        'To the customer of T-1: "Cannot log in" is resolved.'
    ]
    assert ticket(db, "T-1") == {
        "id": "T-1",
        "title": "Cannot log in",
        "status": "closed",
        "agent": "Nour",
    }


@pytest.mark.parametrize(("answer", "reason"), NOT_CONFIRMED)
def test_close_ticket_not_confirmed_sends_nothing(
    mcp: Mcp, db: Path, answer: dict[str, Any], reason: str
) -> None:
    result, _ = mcp.run("close_ticket", {"id": "T-2"}, lambda key, params: answer)
    assert result["resultType"] == "complete"
    assert result["structuredContent"] == {"id": "T-2", "closed": False, "reason": reason}
    assert mcp.outbox() == []
    assert (ticket(db, "T-2") or {})["status"] == "open"


def test_decline_may_carry_content_and_is_still_a_decline(mcp: Mcp) -> None:
    result, _ = mcp.run(
        "close_ticket",
        {"id": "T-2"},
        lambda key, params: {"action": "decline", "content": {"confirm": "yes"}},
    )
    assert result["structuredContent"]["closed"] is False
    assert mcp.outbox() == []


@pytest.mark.parametrize(
    ("answer", "why"),
    [
        ({"action": "decline"}, "decline"),
        ({"action": "cancel"}, "cancel"),
        ({"action": "accept", "content": {"confirm": False}}, "unticked"),
    ],
)
def test_delete_ticket_keeps_the_ticket_unless_confirmed(
    mcp: Mcp, db: Path, answer: dict[str, Any], why: str
) -> None:
    result, asked = mcp.run("delete_ticket", {"id": "T-3"}, lambda key, params: answer)
    assert "T-3" in asked[0]["message"]
    assert result["structuredContent"] == {
        "id": "T-3",
        "deleted": False,
        "reason": f"The user didn't confirm ({why}).",
    }
    assert ticket(db, "T-3") is not None


def test_delete_ticket_confirmed_deletes_it(mcp: Mcp, db: Path) -> None:
    result, asked = mcp.run("delete_ticket", {"id": "T-4"}, accept(CONFIRM))
    assert 'Permanently delete T-4 ("Password reset email missing")' in asked[0]["message"]
    assert result["structuredContent"] == {"id": "T-4", "deleted": True}
    assert ticket(db, "T-4") is None


def test_assign_ticket_asks_only_when_agent_is_missing(mcp: Mcp, db: Path) -> None:
    direct = mcp.result(mcp.call("assign_ticket", {"id": "T-2", "agent": "Sam"}))
    assert direct["resultType"] == "complete"
    assert direct["structuredContent"] == {"id": "T-2", "assigned": True, "agent": "Sam"}

    result, asked = mcp.run("assign_ticket", {"id": "T-3"}, accept({"agent": "Priya"}))
    assert len(asked) == 1
    assert asked[0]["message"] == 'Who should take T-3 ("Login link expired")?'
    field = asked[0]["requestedSchema"]["properties"]["agent"]
    assert field["enum"] == ["Nour", "Sam", "Priya"]
    assert result["structuredContent"] == {"id": "T-3", "assigned": True, "agent": "Priya"}
    assert (ticket(db, "T-3") or {})["agent"] == "Priya"


def test_assign_ticket_declined_assigns_nobody(mcp: Mcp, db: Path) -> None:
    result, _ = mcp.run("assign_ticket", {"id": "T-2"}, reply("decline"))
    assert result["structuredContent"] == {
        "id": "T-2",
        "assigned": False,
        "reason": "The user didn't pick an agent.",
    }
    assert (ticket(db, "T-2") or {})["agent"] == ""


@pytest.mark.parametrize(
    "content",
    [{"confirm": "yes"}, {}, None, {"confirm": None}],
    ids=["wrong-type", "missing-field", "no-content", "null"],
)
def test_a_malformed_answer_is_rejected_and_nothing_happens(
    mcp: Mcp, content: dict[str, Any] | None
) -> None:
    first = mcp.result(mcp.call("close_ticket", {"id": "T-1"}))
    (key,) = first["inputRequests"]
    answer: dict[str, Any] = {"action": "accept"}
    if content is not None:
        answer["content"] = content
    response = mcp.call(
        "close_ticket", {"id": "T-1"}, responses={key: answer}, state=first["requestState"]
    )
    assert response.status_code == 400
    error = response.json["error"]
    assert error["code"] == -32602
    assert error["message"] == "The elicitation answer does not match the requested schema"
    assert error["data"]["key"] == key
    assert error["data"]["errors"]
    assert mcp.outbox() == []


def test_an_unknown_action_is_rejected(mcp: Mcp) -> None:
    first = mcp.result(mcp.call("close_ticket", {"id": "T-1"}))
    (key,) = first["inputRequests"]
    response = mcp.call(
        "close_ticket",
        {"id": "T-1"},
        responses={key: {"action": "maybe"}},
        state=first["requestState"],
    )
    assert response.status_code == 400
    assert response.json["error"]["code"] == -32602
    assert response.json["error"]["data"]["key"] == key


@pytest.mark.parametrize(
    "capabilities",
    [{}, {"elicitation": {"url": {}}}, {"sampling": {}}],
    ids=["none", "url-only", "other"],
)
def test_a_client_that_cannot_show_forms_gets_32021(mcp: Mcp, capabilities: dict[str, Any]) -> None:
    response = mcp.call("close_ticket", {"id": "T-1"}, capabilities=capabilities)
    assert response.status_code == 400
    error = response.json["error"]
    assert error["code"] == -32021
    assert error["data"] == {"requiredCapabilities": {"elicitation": {"form": {}}}}
    # Written for the model an agent framework hands it to: what is wrong, and not to retry.
    message = error["message"]
    assert message.startswith("close_ticket needs the user's answer")
    assert "this client cannot ask the user" in message
    assert "Retrying will not help" in message and "can show forms" in message
    assert mcp.outbox() == []


@pytest.mark.parametrize("capabilities", [{"elicitation": {}}, {"elicitation": {"form": {}}}])
def test_elicitation_without_modes_or_with_form_can_be_asked(
    mcp: Mcp, capabilities: dict[str, Any]
) -> None:
    result = mcp.result(mcp.call("close_ticket", {"id": "T-1"}, capabilities=capabilities))
    assert result["resultType"] == "input_required"


def test_a_client_without_elicitation_can_still_call_tools_that_do_not_ask(mcp: Mcp) -> None:
    response = mcp.call("assign_ticket", {"id": "T-2", "agent": "Nour"}, capabilities={})
    assert mcp.result(response)["structuredContent"]["assigned"] is True


def test_elicitation_disabled_in_the_server_spec(tmp_path: Path, db: Path) -> None:
    server = dataclasses.replace(HELPDESK.server, elicitation_enabled=False)
    mcp = make_client(tmp_path, dataclasses.replace(HELPDESK, server=server))
    response = mcp.call("close_ticket", {"id": "T-1"})
    error = response.json["error"]
    assert error["message"].startswith("Elicitation is disabled in server configuration")
    assert "elicitation: {enabled: true}" in error["message"]
    assert "kind: server" in error["message"]
    assert error["data"]["type"] == "ELICITATION_DISABLED"
    assert not -32768 <= error["code"] <= -32000
    assert mcp.outbox() == []
    # A tool that does not need to ask still works.
    done = mcp.call("assign_ticket", {"id": "T-2", "agent": "Sam"})
    assert mcp.result(done)["structuredContent"]["assigned"] is True


def test_retrying_the_final_round_returns_the_recorded_result_and_acts_once(
    mcp: Mcp, db: Path
) -> None:
    first = mcp.result(mcp.call("close_ticket", {"id": "T-1"}))
    (key,) = first["inputRequests"]
    responses = {key: {"action": "accept", "content": CONFIRM}}
    results = [
        mcp.result(
            mcp.call(
                "close_ticket", {"id": "T-1"}, responses=responses, state=first["requestState"]
            )
        )
        for _ in range(3)
    ]
    assert results[0]["structuredContent"] == {"id": "T-1", "closed": True}
    assert all(r == results[0] for r in results)
    assert len(mcp.outbox()) == 1


def test_retrying_a_delete_after_it_ran_replays_instead_of_failing(mcp: Mcp, db: Path) -> None:
    first = mcp.result(mcp.call("delete_ticket", {"id": "T-4"}))
    (key,) = first["inputRequests"]
    responses = {key: {"action": "accept", "content": CONFIRM}}
    again = [
        mcp.result(
            mcp.call(
                "delete_ticket", {"id": "T-4"}, responses=responses, state=first["requestState"]
            )
        )
        for _ in range(2)
    ]
    # The ticket is gone after the first; the retry must not say "There's no ticket T-4".
    assert again[0] == again[1]
    assert again[1]["structuredContent"] == {"id": "T-4", "deleted": True}


def test_a_retry_whose_question_now_reads_otherwise_replays_the_act(mcp: Mcp, db: Path) -> None:
    first = mcp.result(mcp.call("close_ticket", {"id": "T-1"}))
    (key,) = first["inputRequests"]
    responses = {key: {"action": "accept", "content": CONFIRM}}
    done = mcp.result(
        mcp.call("close_ticket", {"id": "T-1"}, responses=responses, state=first["requestState"])
    )
    with sqlite3.connect(db) as conn:  # NOTE: the question quotes the title: it reads otherwise
        conn.execute("UPDATE tickets SET title = 'Renamed since' WHERE id = 'T-1'")

    again = mcp.result(
        mcp.call("close_ticket", {"id": "T-1"}, responses=responses, state=first["requestState"])
    )
    unanswered = mcp.result(mcp.call("close_ticket", {"id": "T-1"}, state=first["requestState"]))

    assert again == done  # the act's record, not the question asked again
    assert unanswered == done
    assert len(mcp.outbox()) == 1


def test_two_calls_with_the_same_arguments_are_two_calls(mcp: Mcp) -> None:
    for _ in range(2):
        result, _ = mcp.run("close_ticket", {"id": "T-1"}, accept(CONFIRM))
        assert result["structuredContent"]["closed"] is True
    assert len(mcp.outbox()) == 2


def test_unknown_response_keys_are_ignored(mcp: Mcp) -> None:
    first = mcp.result(mcp.call("close_ticket", {"id": "T-1"}))
    (key,) = first["inputRequests"]
    responses = {
        key: {"action": "accept", "content": CONFIRM},
        "not-asked": {"action": "accept", "content": {"anything": "at all"}},
    }
    result = mcp.result(
        mcp.call("close_ticket", {"id": "T-1"}, responses=responses, state=first["requestState"])
    )
    assert result["structuredContent"] == {"id": "T-1", "closed": True}


def test_a_retry_without_answers_asks_the_same_question_again(mcp: Mcp) -> None:
    first = mcp.result(mcp.call("close_ticket", {"id": "T-1"}))
    again = mcp.result(mcp.call("close_ticket", {"id": "T-1"}, state=first["requestState"]))
    assert again["resultType"] == "input_required"
    assert again["inputRequests"] == first["inputRequests"]
    final = mcp.result(
        mcp.call(
            "close_ticket",
            {"id": "T-1"},
            responses={k: {"action": "accept", "content": CONFIRM} for k in again["inputRequests"]},
            state=again["requestState"],
        )
    )
    assert final["structuredContent"]["closed"] is True
    assert len(mcp.outbox()) == 1


def test_when_the_data_changes_between_rounds_the_question_is_asked_again(
    mcp: Mcp, db: Path
) -> None:
    first = mcp.result(mcp.call("close_ticket", {"id": "T-1"}))
    (key,) = first["inputRequests"]
    with sqlite3.connect(db) as conn:
        conn.execute("UPDATE tickets SET title = 'Refund the customer' WHERE id = 'T-1'")
    second = mcp.result(
        mcp.call(
            "close_ticket",
            {"id": "T-1"},
            responses={key: {"action": "accept", "content": CONFIRM}},
            state=first["requestState"],
        )
    )
    # The user agreed to close "Cannot log in"; that yes must not close "Refund the customer".
    assert second["resultType"] == "input_required"
    assert "Refund the customer" in second["inputRequests"][key]["params"]["message"]
    assert mcp.outbox() == []
    final = mcp.result(
        mcp.call(
            "close_ticket",
            {"id": "T-1"},
            responses={key: {"action": "accept", "content": CONFIRM}},
            state=second["requestState"],
        )
    )
    assert final["structuredContent"] == {"id": "T-1", "closed": True}
    assert mcp.outbox() == ['To the customer of T-1: "Refund the customer" is resolved.']


def test_a_missing_ticket_is_a_tool_error_the_model_can_read(mcp: Mcp) -> None:
    result = mcp.result(mcp.call("close_ticket", {"id": "T-99"}))
    assert result["resultType"] == "complete"
    assert result["isError"] is True
    assert result["content"] == [{"type": "text", "text": "There's no ticket T-99."}]
