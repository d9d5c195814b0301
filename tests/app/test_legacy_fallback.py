"""``sendElicitationResult``: questions in tool results, for legacy clients that cannot show forms.

The seed tutorial's behaviours through the fallback tool, end to end through the WSGI app: a
2025-03-26 session (no form elicitation in that revision), a 2025-11-25 one without the capability.
"""

from __future__ import annotations

import json
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from host.auth import AuthSettings
from support.asks import make_tokens
from support.helpdesk import HELPDESK, emails, survey_project, ticket
from support.legacy import Legacy, legacy_client, structured
from support.modern import app_client

FALLBACK = "sendElicitationResult"


@pytest.fixture(params=["2025-03-26", "2025-11-25"])
def legacy(request: pytest.FixtureRequest, tmp_path: Path, db: Path) -> Legacy:
    client = legacy_client(tmp_path)
    client.initialize(request.param, {})
    return client


def asked(result: dict[str, Any]) -> dict[str, Any]:
    """The elicitation a question result carries (its second text block, JSON)."""
    assert "isError" not in result, result
    assert "structuredContent" not in result
    text, request = result["content"]
    assert FALLBACK in text["text"]
    question: dict[str, Any] = json.loads(request["text"])
    assert question["elicitationId"] in text["text"]
    return question


def send(legacy: Legacy, eid: str, action: str, content: Any = None) -> dict[str, Any]:
    arguments: dict[str, Any] = {"elicitationId": eid, "action": action}
    if content is not None:
        arguments["content"] = content
    return legacy.call(FALLBACK, arguments)


def test_the_result_tells_the_model_what_to_ask_and_how_to_answer(legacy: Legacy) -> None:
    result = legacy.call("close_ticket", {"id": "T-1"})
    question = asked(result)
    text = result["content"][0]["text"]
    assert text.startswith("close_ticket needs an answer from the user")
    assert "Do not answer it for them" in text
    assert 'Question: Close T-1 ("Cannot log in") and email the customer' in text
    assert "- confirm (true or false; required): Tick to close the ticket" in text
    assert f'elicitationId: "{question["elicitationId"]}"' in text
    assert '"accept"' in text and '"decline"' in text and '"cancel"' in text
    assert '{"confirm": true}' in text
    assert "works once and expires in 10 minutes" in text
    assert question["message"].startswith("Close T-1")
    assert question["requestedSchema"]["required"] == ["confirm"]


def test_accepting_closes_and_sends_exactly_one_email(legacy: Legacy, db: Path) -> None:
    question = asked(legacy.call("close_ticket", {"id": "T-1"}))
    assert emails(db, "T-1") == 0
    done = send(legacy, question["elicitationId"], "accept", {"confirm": True})
    assert structured(done) == {"id": "T-1", "closed": True}
    assert emails(db, "T-1") == 1
    assert ticket(db, "T-1")["status"] == "closed"  # type: ignore[index]
    again = send(legacy, question["elicitationId"], "accept", {"confirm": True})
    assert again["isError"] is True
    assert "already used" in again["content"][0]["text"]
    assert emails(db, "T-1") == 1


@pytest.mark.parametrize(
    ("action", "content", "reason"),
    [
        ("decline", None, "The user said no. Leave the ticket open."),
        ("cancel", None, "The user dismissed the question without answering."),
        ("accept", {"confirm": False}, "The user didn't tick the box."),
    ],
    ids=["decline", "cancel", "unticked"],
)
def test_not_confirmed_sends_nothing(
    legacy: Legacy, db: Path, action: str, content: Any, reason: str
) -> None:
    question = asked(legacy.call("close_ticket", {"id": "T-2"}))
    done = send(legacy, question["elicitationId"], action, content)
    assert structured(done) == {"id": "T-2", "closed": False, "reason": reason}
    assert emails(db, "T-2") == 0


def test_a_mismatched_answer_can_be_corrected(legacy: Legacy, db: Path) -> None:
    question = asked(legacy.call("close_ticket", {"id": "T-3"}))
    eid = question["elicitationId"]
    wrong = send(legacy, eid, "accept", {"confirm": "yes"})
    assert wrong["isError"] is True
    text = wrong["content"][0]["text"]
    assert "does not match the requested schema" in text and "- confirm:" in text
    assert "same elicitationId" in text
    assert emails(db, "T-3") == 0
    missing = send(legacy, eid, "accept")
    assert missing["isError"] is True
    done = send(legacy, eid, "accept", {"confirm": True})
    assert structured(done) == {"id": "T-3", "closed": True}
    assert emails(db, "T-3") == 1


def test_assign_ticket_through_the_fallback(legacy: Legacy) -> None:
    result = legacy.call("assign_ticket", {"id": "T-2"})
    text = result["content"][0]["text"]
    assert '- agent (one of "Nour", "Sam", "Priya"; required): Support agent' in text
    question = asked(result)
    done = send(legacy, question["elicitationId"], "accept", {"agent": "Priya"})
    assert structured(done) == {"id": "T-2", "assigned": True, "agent": "Priya"}


def test_bad_arguments_and_unknown_ids(legacy: Legacy) -> None:
    bad = legacy.call(FALLBACK, {"action": "accept"})
    assert bad["isError"] is True and "elicitationId" in bad["content"][0]["text"]
    bad = legacy.call(FALLBACK, {"elicitationId": "x", "action": "maybe"})
    assert bad["isError"] is True
    bad = legacy.call(FALLBACK, {"elicitationId": "x", "action": "accept", "content": [1]})
    assert bad["isError"] is True and "content must be an object" in bad["content"][0]["text"]
    unknown = send(legacy, "no-such-id", "decline")
    assert unknown["isError"] is True
    text = unknown["content"][0]["text"]
    assert "No question has the elicitationId 'no-such-id'" in text
    assert "copied the id exactly" in text and "will not work" in text


def test_another_session_of_the_same_caller_finishes_the_call(tmp_path: Path, db: Path) -> None:
    # What clients that open a session (or start a process) per call do.
    first = legacy_client(tmp_path)
    first.initialize("2025-03-26", {})
    question = asked(first.call("delete_ticket", {"id": "T-4"}))
    second = Legacy(first.http)
    second.initialize("2025-06-18", {})
    done = send(second, question["elicitationId"], "accept", {"confirm": True})
    assert structured(done) == {"id": "T-4", "deleted": True}
    assert ticket(db, "T-4") is None
    again = send(first, question["elicitationId"], "accept", {"confirm": True})
    assert "already used" in again["content"][0]["text"]


def test_an_id_is_bound_to_its_caller(tmp_path: Path, db: Path) -> None:
    tokens = make_tokens(tmp_path / "tokens")
    http = app_client(tmp_path, auth=AuthSettings(tokens_file=Path(tokens["file"])))
    owner = Legacy(http, extra={"Authorization": f"Bearer {tokens['alice']}"})
    owner.initialize("2025-03-26", {})
    question = asked(owner.call("delete_ticket", {"id": "T-4"}))
    other = Legacy(http, extra={"Authorization": f"Bearer {tokens['bob']}"})
    other.initialize("2025-03-26", {})
    refused = send(other, question["elicitationId"], "accept", {"confirm": True})
    assert refused["isError"] is True
    text = refused["content"][0]["text"]
    assert "asked of another user" in text and "Do not send it again" in text
    assert ticket(db, "T-4") is not None
    # The refusal did not spend it, and the owner's next session finishes it.
    owner.initialize("2025-03-26", {})
    done = send(owner, question["elicitationId"], "accept", {"confirm": True})
    assert structured(done) == {"id": "T-4", "deleted": True}
    assert ticket(db, "T-4") is None


def test_an_id_expires(tmp_path: Path, db: Path) -> None:
    legacy = legacy_client(tmp_path, state_ttl_s=1.0)
    legacy.initialize("2025-03-26", {})
    question = asked(legacy.call("close_ticket", {"id": "T-1"}))
    time.sleep(1.2)  # the scenario: the question (1 s) expires
    expired = send(legacy, question["elicitationId"], "accept", {"confirm": True})
    assert "the question expired" in expired["content"][0]["text"]
    assert emails(db, "T-1") == 0


def test_the_fallback_tool_is_not_there_for_sessions_with_forms(tmp_path: Path, db: Path) -> None:
    legacy = legacy_client(tmp_path)
    legacy.initialize("2025-11-25", {"elicitation": {}})
    response = legacy.request("tools/call", {"name": FALLBACK, "arguments": {}})
    assert response.json["error"]["code"] == -32602


def test_several_questions_are_asked_one_result_at_a_time(tmp_path: Path) -> None:
    legacy = legacy_client(tmp_path, project=survey_project(tmp_path))
    legacy.initialize("2025-03-26", {})
    first = legacy.call("survey")
    text = first["content"][0]["text"]
    assert "Question: Who are you?" in text
    assert '- name (text; optional, default "Ann"): Your name' in text
    assert '- team (one of "red" (Red team), "blue" (Blue team); required)' in text
    assert '- tags (a list of any of "a", "b", "c"; optional, default ["a"])' in text
    eid = asked(first)["elicitationId"]
    content = {"name": "Bo", "team": "blue", "tags": ["b"]}
    second = send(legacy, eid, "accept", content)
    assert "Question: Which day?" in second["content"][0]["text"]
    day = asked(second)["elicitationId"]
    assert day != eid
    done = send(legacy, day, "accept", {"day": "mon"})
    assert json.loads(done["content"][0]["text"]) == {
        "name": "Bo",
        "team": "blue",
        "tags": ["b"],
        "day": "mon",
        "urgent": False,
    }
    declined = asked(legacy.call("survey"))["elicitationId"]
    declined = asked(send(legacy, declined, "accept", {"team": "red"}))["elicitationId"]
    assert json.loads(send(legacy, declined, "decline")["content"][0]["text"]) == {
        "recorded": False
    }


def test_a_server_that_refuses_the_fallback_gives_such_clients_the_missing_capability_error(
    tmp_path: Path, db: Path
) -> None:
    refusing = replace(HELPDESK, server=replace(HELPDESK.server, fallback_enabled=False))
    legacy = legacy_client(tmp_path, project=refusing)
    legacy.initialize("2025-03-26", {})

    listed = [t["name"] for t in legacy.request("tools/list", {}).json["result"]["tools"]]
    assert FALLBACK not in listed and "close_ticket" in listed
    refused = legacy.request("tools/call", {"name": "close_ticket", "arguments": {"id": "T-1"}})
    assert refused.json["error"]["code"] == -32021
    assert "cannot ask the user" in refused.json["error"]["message"]
    assert "Retrying will not help" in refused.json["error"]["message"]
    unknown = legacy.request("tools/call", {"name": FALLBACK, "arguments": {}})
    assert unknown.json["error"]["code"] == -32602
    assert emails(db, "T-1") == 0
    # Tools that never ask still work.
    assert "isError" not in legacy.call("list_outbox")
