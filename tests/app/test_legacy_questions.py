"""Questions to legacy clients that show forms: ``elicitation/create`` on the call's event stream.

The seed tutorial's behaviours, for 2025-11-25 and 2025-06-18 sessions, through the real WSGI app:
the stream is read lazily, the answer is POSTed while it waits, as a client does.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import pytest

from host.machine import compile_project
from host.protocol import EventStream, LegacyOptions, RequestContext, make_endpoint
from host.store import open_store
from support.helpdesk import HELPDESK, NOT_CONFIRMED, emails, survey_project, ticket
from support.legacy import Legacy, legacy_client

FORMS = ["2025-11-25", "2025-06-18"]
CONFIRM = {"action": "accept", "content": {"confirm": True}}


def ask_and_answer(legacy: Legacy, name: str, arguments: dict[str, Any], answer: Any) -> Any:
    """Call, answer the one question, and return (question, final message)."""
    events = legacy.stream(name, arguments)
    question = events.next()
    assert legacy.answer(question, answer).status_code == 202
    (final,) = events.rest()
    return question, final


@pytest.mark.parametrize("version", FORMS)
def test_close_ticket_asks_on_the_stream_and_closes_on_yes(
    legacy: Legacy, db: Path, version: str
) -> None:
    legacy.initialize(version)
    events = legacy.stream("close_ticket", {"id": "T-1"})
    assert events.status == "200 OK"
    assert events.headers["content-type"] == "text/event-stream"
    question = events.next()
    assert question["method"] == "elicitation/create"
    assert isinstance(question["id"], str) and len(question["id"]) >= 20
    params = question["params"]
    assert ("mode" in params) is (version == "2025-11-25")
    assert params["message"] == (
        'Close T-1 ("Cannot log in") and email the customer that it\'s resolved?'
    )
    assert params["requestedSchema"] == {
        "type": "object",
        "properties": {"confirm": {"type": "boolean", "description": "Tick to close the ticket"}},
        "required": ["confirm"],
    }
    assert emails(db, "T-1") == 0
    assert legacy.answer(question, CONFIRM).status_code == 202
    (final,) = events.rest()
    assert final["id"] == legacy.next_id - 1
    assert final["result"]["structuredContent"] == {"id": "T-1", "closed": True}
    assert "resultType" not in final["result"]
    assert emails(db, "T-1") == 1
    assert ticket(db, "T-1")["status"] == "closed"  # type: ignore[index]


@pytest.mark.parametrize(("answer", "reason"), NOT_CONFIRMED)
def test_close_ticket_not_confirmed_sends_nothing(
    legacy: Legacy, db: Path, answer: dict[str, Any], reason: str
) -> None:
    legacy.initialize()
    _, final = ask_and_answer(legacy, "close_ticket", {"id": "T-2"}, answer)
    assert final["result"]["structuredContent"] == {"id": "T-2", "closed": False, "reason": reason}
    assert emails(db, "T-2") == 0
    assert ticket(db, "T-2")["status"] == "open"  # type: ignore[index]


def test_a_mismatched_answer_fails_the_call_like_2026(legacy: Legacy, db: Path) -> None:
    legacy.initialize()
    _, final = ask_and_answer(
        legacy, "close_ticket", {"id": "T-3"}, {"action": "accept", "content": {"confirm": "yes"}}
    )
    assert final["error"]["code"] == -32602
    assert final["error"]["message"] == "The elicitation answer does not match the requested schema"
    assert final["error"]["data"]["key"] == "close"
    assert emails(db, "T-3") == 0


def test_assign_ticket_asks_only_when_needed(legacy: Legacy, db: Path) -> None:
    legacy.initialize("2025-06-18", {"elicitation": {}})
    question, final = ask_and_answer(
        legacy, "assign_ticket", {"id": "T-2"}, {"action": "accept", "content": {"agent": "Priya"}}
    )
    schema = question["params"]["requestedSchema"]["properties"]["agent"]
    assert schema["enum"] == ["Nour", "Sam", "Priya"]
    assert final["result"]["structuredContent"] == {"id": "T-2", "assigned": True, "agent": "Priya"}
    direct = legacy.call("assign_ticket", {"id": "T-3", "agent": "Sam"})
    assert direct["structuredContent"]["agent"] == "Sam"


def test_the_act_runs_once_and_answers_are_single_use(legacy: Legacy, db: Path) -> None:
    legacy.initialize()
    events = legacy.stream("close_ticket", {"id": "T-4"})
    question = events.next()
    assert legacy.answer(question, CONFIRM).status_code == 202
    again = legacy.answer(question, CONFIRM)
    assert again.status_code == 400
    assert again.json["error"]["message"] == "This question was already answered"
    events.rest()
    late = legacy.answer(question, CONFIRM)
    assert late.status_code == 400 and late.json["error"]["message"].startswith("Unknown response")
    assert emails(db, "T-4") == 1


def test_another_session_cannot_answer(tmp_path: Path, legacy: Legacy, db: Path) -> None:
    legacy.initialize()
    events = legacy.stream("close_ticket", {"id": "T-1"})
    question = events.next()
    intruder = Legacy(legacy.http)
    intruder.initialize()
    refused = intruder.answer(question, CONFIRM)
    assert refused.status_code == 400
    assert legacy.answer(question, {"action": "decline"}).status_code == 202
    (final,) = events.rest()
    assert final["result"]["structuredContent"]["closed"] is False
    assert emails(db, "T-1") == 0


def test_a_client_error_ends_the_call_without_acting(legacy: Legacy, db: Path) -> None:
    legacy.initialize()
    events = legacy.stream("delete_ticket", {"id": "T-1"})
    question = events.next()
    error = {"code": -32601, "message": "Method not found"}
    response = legacy.post({"jsonrpc": "2.0", "id": question["id"], "error": error})
    assert response.status_code == 202
    (final,) = events.rest()
    assert final["result"]["isError"] is True
    assert "could not show the question (error -32601" in final["result"]["content"][0]["text"]
    assert ticket(db, "T-1") is not None


def test_closing_the_stream_abandons_the_question(legacy: Legacy, db: Path) -> None:
    legacy.initialize()
    events = legacy.stream("delete_ticket", {"id": "T-2"})
    question = events.next()
    events.chunks.close()  # type: ignore[attr-defined]
    refused = legacy.answer(question, {"action": "accept", "content": {"confirm": True}})
    assert refused.status_code == 400
    assert ticket(db, "T-2") is not None


def test_a_session_that_ended_cannot_answer(legacy: Legacy, db: Path) -> None:
    legacy.initialize()
    events = legacy.stream("delete_ticket", {"id": "T-3"})
    question = events.next()
    assert legacy.http.simulate_delete("/mcp", headers=legacy.headers()).status_code == 204
    assert legacy.answer(question, CONFIRM).status_code == 404
    events.chunks.close()  # type: ignore[attr-defined]
    assert ticket(db, "T-3") is not None


def test_several_questions_of_one_round_go_one_after_another(tmp_path: Path) -> None:
    legacy = legacy_client(tmp_path, project=survey_project(tmp_path))
    legacy.initialize("2025-06-18", {"elicitation": {}})
    events = legacy.stream("survey")
    first = events.next()
    assert first["params"]["message"] == "Who are you?"
    schema = first["params"]["requestedSchema"]
    # 2025-06-18 knows no titled or multi-select enums and no defaults except on booleans.
    assert schema["properties"]["name"] == {"type": "string", "description": "Your name"}
    assert schema["properties"]["team"] == {
        "type": "string",
        "enum": ["red", "blue"],
        "enumNames": ["Red team", "Blue team"],
    }
    assert schema["properties"]["tags"]["type"] == "string"
    assert "comma-separated" in schema["properties"]["tags"]["description"]
    assert "mode" not in first["params"]
    answer = {"name": "Bo", "team": "blue", "tags": "a, c"}
    assert legacy.answer(first, {"action": "accept", "content": answer}).status_code == 202
    second = events.next()
    assert second["params"]["message"] == "Which day?"
    assert second["params"]["requestedSchema"]["properties"]["urgent"]["default"] is False
    assert legacy.answer(second, {"action": "accept", "content": {"day": "tue"}}).status_code == 202
    (final,) = events.rest()
    assert final["result"]["structuredContent"] == {
        "name": "Bo",
        "team": "blue",
        "tags": ["a", "c"],
        "day": "tue",
        "urgent": False,
    }


def test_2025_11_25_gets_the_form_unchanged(tmp_path: Path) -> None:
    legacy = legacy_client(tmp_path, project=survey_project(tmp_path))
    legacy.initialize("2025-11-25")
    question = legacy.stream("survey").next()
    schema = question["params"]["requestedSchema"]["properties"]
    assert question["params"]["mode"] == "form"
    assert schema["team"]["oneOf"][0] == {"const": "red", "title": "Red team"}
    assert schema["tags"]["items"] == {"type": "string", "enum": ["a", "b", "c"]}
    assert schema["name"]["default"] == "Ann"


@pytest.mark.parametrize("capabilities", [{}, {"elicitation": {}}])
def test_elicitation_disabled_is_the_same_error_as_2026(
    tmp_path: Path, db: Path, capabilities: dict[str, Any]
) -> None:
    server = dataclasses.replace(HELPDESK.server, elicitation_enabled=False)
    legacy = legacy_client(tmp_path, dataclasses.replace(HELPDESK, server=server))
    legacy.initialize("2025-06-18", capabilities)
    assert "sendElicitationResult" not in [t["name"] for t in legacy.tools()]
    response = legacy.request("tools/call", {"name": "close_ticket", "arguments": {"id": "T-1"}})
    assert response.status_code == 200
    error = response.json["error"]
    assert error["data"]["type"] == "ELICITATION_DISABLED"
    assert error["message"].startswith("Elicitation is disabled in server configuration")
    assert emails(db, "T-1") == 0


def endpoint_for(tmp_path: Path, options: LegacyOptions) -> Any:
    store = open_store(f"sqlite:///{tmp_path / 'store.db'}")
    return make_endpoint(
        HELPDESK.server,
        compile_project(HELPDESK),
        store,
        keys=["k"],
        state_ttl_s=600,
        data_dir=tmp_path,
        legacy=options,
    )


def test_an_unanswered_question_times_out_with_a_clear_result(tmp_path: Path, db: Path) -> None:
    endpoint = endpoint_for(tmp_path, LegacyOptions(answer_timeout_s=0.6, keepalive_s=0.2))
    init = b'{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{"elicitation":{}}}}'  # noqa: E501
    session = endpoint.handle(init, RequestContext.http({})).headers["Mcp-Session-Id"]
    call = b'{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"delete_ticket","arguments":{"id":"T-4"}}}'  # noqa: E501
    reply = endpoint.handle(call, RequestContext.http({"mcp-session-id": session}))
    assert isinstance(reply.stream, EventStream)
    events = list(reply.stream)
    assert events[0].startswith(b"event: message\ndata: ")
    assert events.count(b": keep-alive\n\n") >= 2
    assert b"No answer to the question" in events[-1] and b"within 0.6 seconds" in events[-1]
    assert b"stopped without doing anything" in events[-1] and b'"isError":true' in events[-1]
    assert ticket(db, "T-4") is not None


def test_answer_timeout_and_session_ttl_are_read_from_the_environment() -> None:
    from host.settings import Settings, SettingsError

    settings = Settings.from_env({"HOST_ANSWER_TIMEOUT": "42", "HOST_SESSION_TTL": "60"})
    assert settings.legacy().answer_timeout_s == 42
    assert settings.legacy().session_ttl_s == 60
    with pytest.raises(SettingsError, match="HOST_ANSWER_TIMEOUT must be a positive number"):
        Settings.from_env({"HOST_ANSWER_TIMEOUT": "soon"})
    assert Settings.from_env({}).legacy() == LegacyOptions()
