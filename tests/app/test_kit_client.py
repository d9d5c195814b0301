"""The test client on its own, against a small scripted server that behaves (or not) as told.

The scripted server is a real Falcon app: it records every request the client sends, so these
tests check what the client puts on the wire, and it answers whatever a test scripts, so they
check that the client refuses what a conforming client must refuse.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from typing import Any

import falcon
import pytest

from host.client.wire import META_CAPABILITIES, META_VERSION
from host.testing import McpClient, ProtocolViolation, UnansweredQuestion, WsgiTransport, like

Script = Callable[[dict[str, Any], int], dict[str, Any]]

ASK = {
    "resultType": "input_required",
    "inputRequests": {
        "close": {
            "method": "elicitation/create",
            "params": {
                "mode": "form",
                "message": "Close T-1?",
                "requestedSchema": {
                    "type": "object",
                    "properties": {"confirm": {"type": "boolean"}},
                    "required": ["confirm"],
                },
            },
        }
    },
    "requestState": "opaque-state-1",
}


def done(structured: Any) -> dict[str, Any]:
    return {
        "resultType": "complete",
        "content": [{"type": "text", "text": json.dumps(structured)}],
        "structuredContent": structured,
    }


class Scripted:
    """A WSGI app answering each POST with ``script(message, n)``; it keeps what it was sent."""

    def __init__(self, script: Script) -> None:
        self.script = script
        self.requests: list[dict[str, Any]] = []
        self.headers: list[dict[str, str]] = []

    def on_post(self, req: falcon.Request, resp: falcon.Response) -> None:
        message = json.loads(req.bounded_stream.read())
        self.requests.append(message)
        self.headers.append({k.lower(): v for k, v in req.headers.items()})
        result = self.script(message, len(self.requests))
        resp.media = {"jsonrpc": "2.0", "id": message.get("id"), **result}


def client_of(script: Script, **options: Any) -> tuple[McpClient, Scripted]:
    server = Scripted(script)
    app = falcon.App()
    app.add_route("/mcp", server)
    return McpClient(WsgiTransport(app), **options), server


def ask_then_close(message: dict[str, Any], n: int) -> dict[str, Any]:
    params = message["params"]
    if "inputResponses" not in params:
        return {"result": ASK}
    answer = params["inputResponses"]["close"]
    closed = answer["action"] == "accept" and answer.get("content", {}).get("confirm") is True
    return {"result": done({"id": "T-1", "closed": closed})}


def test_a_call_that_asks_is_sent_again_with_a_new_id_the_answer_and_the_state() -> None:
    mcp, server = client_of(ask_then_close)
    mcp.on_elicitation({"action": "accept", "content": {"confirm": True}})

    result = mcp.tools.call("close_ticket", {"id": "T-1"})

    assert result.json() == {"id": "T-1", "closed": True}
    assert result.rounds == 2
    first, second = server.requests
    assert first["id"] != second["id"]
    assert second["method"] == "tools/call"
    assert second["params"]["name"] == "close_ticket"
    assert second["params"]["arguments"] == {"id": "T-1"}
    assert second["params"]["requestState"] == "opaque-state-1"
    assert second["params"]["inputResponses"] == {
        "close": {"action": "accept", "content": {"confirm": True}}
    }
    assert "inputResponses" not in first["params"]


def test_every_request_carries_the_modern_meta_and_headers() -> None:
    mcp, server = client_of(ask_then_close)
    mcp.on_elicitation("decline")
    mcp.tools.call("close_ticket", {"id": "T-1"})

    for message, headers in zip(server.requests, server.headers, strict=True):
        meta = message["params"]["_meta"]
        assert meta[META_VERSION] == "2026-07-28"
        assert meta[META_CAPABILITIES] == {"elicitation": {"form": {}}}
        assert meta["io.modelcontextprotocol/clientInfo"]["name"]
        assert headers["mcp-protocol-version"] == "2026-07-28"
        assert headers["mcp-method"] == "tools/call"
        assert headers["mcp-name"] == "close_ticket"
        assert "application/json" in headers["accept"]
        assert "text/event-stream" in headers["accept"]


def test_a_retry_carries_only_the_latest_rounds_answers() -> None:
    def twice(message: dict[str, Any], n: int) -> dict[str, Any]:
        if n == 1:
            return {"result": ASK}
        if n == 2:
            again = json.loads(json.dumps(ASK).replace('"close"', '"pick"'))
            again["requestState"] = "opaque-state-2"
            return {"result": again}
        return {"result": done({"ok": True})}

    mcp, server = client_of(twice)
    mcp.on_elicitation({"close": "decline", "pick": {"action": "cancel"}})
    result = mcp.tools.call("t", {})

    assert result.asked == ["close", "pick"]
    assert server.requests[1]["params"]["inputResponses"] == {"close": {"action": "decline"}}
    assert server.requests[2]["params"]["inputResponses"] == {"pick": {"action": "cancel"}}
    assert server.requests[2]["params"]["requestState"] == "opaque-state-2"
    assert [q.round for q in mcp.questions] == [1, 2]


def test_answers_as_a_function_get_the_question() -> None:
    mcp, _ = client_of(ask_then_close)
    seen = []

    def answer(question: Any) -> dict[str, Any]:
        seen.append((question.key, question.message, question.requested_schema["required"]))
        return {"action": "accept", "content": {"confirm": False}}

    mcp.on_elicitation(answer)
    assert mcp.tools.call("close_ticket", {"id": "T-1"}).json() == like({"closed": False})
    assert seen == [("close", "Close T-1?", ["confirm"])]


def test_answers_as_a_list_are_used_in_order_and_running_out_fails_showing_the_question() -> None:
    mcp, _ = client_of(ask_then_close)
    mcp.on_elicitation(["decline"])
    assert mcp.tools.call("close_ticket", {"id": "T-1"}).json()["closed"] is False
    with pytest.raises(UnansweredQuestion) as caught:
        mcp.tools.call("close_ticket", {"id": "T-1"})
    message = str(caught.value)
    assert "the 1 answer(s) given were used up" in message
    assert "Close T-1?" in message
    assert '"confirm"' in message


def test_no_answer_fails_the_test_with_the_question() -> None:
    mcp, _ = client_of(ask_then_close)
    with pytest.raises(UnansweredQuestion) as caught:
        mcp.tools.call("close_ticket", {"id": "T-1"})
    message = str(caught.value)
    assert "close_ticket asked a question and this test gives no answer" in message
    assert "close (round 1): Close T-1?" in message
    assert "mcp.on_elicitation" in message
    assert [q.key for q in mcp.questions] == ["close"]


def test_a_mapping_that_does_not_cover_the_question_says_which_it_covers() -> None:
    mcp, _ = client_of(ask_then_close)
    mcp.on_elicitation({"other": "decline"})
    with pytest.raises(UnansweredQuestion, match=r"asked 'close'.*they answer 'other'"):
        mcp.tools.call("close_ticket", {"id": "T-1"})


def test_an_answer_without_an_action_is_refused() -> None:
    mcp, _ = client_of(ask_then_close)
    mcp.on_elicitation(lambda q: {"content": {"confirm": True}})
    with pytest.raises(UnansweredQuestion, match="must be a mapping with an action"):
        mcp.tools.call("close_ticket", {"id": "T-1"})


def test_answers_for_one_call_override_the_handler() -> None:
    mcp, _ = client_of(ask_then_close)
    mcp.on_elicitation("decline")
    result = mcp.tools.call(
        "close_ticket",
        {"id": "T-1"},
        answers={"close": {"action": "accept", "content": {"confirm": True}}},
    )
    assert result.json()["closed"] is True


def test_a_question_to_a_client_that_cannot_be_asked_is_a_protocol_violation() -> None:
    mcp, _ = client_of(ask_then_close)
    plain = mcp.client(capabilities={})
    plain.on_elicitation("decline")
    with pytest.raises(ProtocolViolation, match="did not declare that kind of elicitation"):
        plain.tools.call("close_ticket", {"id": "T-1"})


def test_a_server_that_never_stops_asking_fails_after_max_rounds() -> None:
    mcp, server = client_of(lambda message, n: {"result": ASK}, max_rounds=3)
    mcp.on_elicitation("decline")
    with pytest.raises(ProtocolViolation, match="still asking after 3 rounds"):
        mcp.tools.call("t", {})
    assert len(server.requests) == 3


def test_a_modern_result_without_result_type_is_a_protocol_violation() -> None:
    mcp, _ = client_of(lambda message, n: {"result": {"content": []}})
    with pytest.raises(ProtocolViolation, match="must carry resultType"):
        mcp.tools.call("t", {})


def test_a_response_to_another_id_is_a_protocol_violation() -> None:
    mcp, _ = client_of(lambda message, n: {"result": done({}), "id": 999})
    with pytest.raises(ProtocolViolation, match="got a response for id 999"):
        mcp.tools.call("t", {})


def test_tools_list_follows_next_cursor() -> None:
    def pages(message: dict[str, Any], n: int) -> dict[str, Any]:
        if message["params"].get("cursor") is None:
            return {
                "result": {"resultType": "complete", "tools": [{"name": "a"}], "nextCursor": "p2"}
            }
        return {"result": {"resultType": "complete", "tools": [{"name": "b"}]}}

    mcp, _ = client_of(pages)
    tools = mcp.tools.list()
    assert tools.names == ["a", "b"]
    assert "b" in tools
    assert "c" not in tools
    assert repr(tools) == "ToolList(['a', 'b'])"
    assert tools.get("a") == {"name": "a"}


def test_raw_request_fills_in_only_what_is_missing() -> None:
    mcp, server = client_of(lambda message, n: {"result": done({})})
    mcp.raw.request(
        {
            "jsonrpc": "2.0",
            "id": 7,
            "method": "tools/call",
            "params": {"name": "x", "_meta": {META_CAPABILITIES: {}}},
        },
        headers={"Mcp-Name": "y", "Accept": None},
    )
    [sent] = server.requests
    [headers] = server.headers
    assert sent["id"] == 7
    assert sent["params"]["_meta"][META_CAPABILITIES] == {}
    assert sent["params"]["_meta"][META_VERSION] == "2026-07-28"
    assert headers["mcp-name"] == "y"
    assert headers["mcp-method"] == "tools/call"
    assert "accept" not in headers


def test_raw_post_sends_exactly_what_it_is_given() -> None:
    mcp, server = client_of(lambda message, n: {"result": done({})})
    response = mcp.raw.post({"jsonrpc": "2.0", "id": 1, "method": "m"}, {"X-Test": "1"})
    assert server.requests == [{"jsonrpc": "2.0", "id": 1, "method": "m"}]
    assert "mcp-method" not in server.headers[0]
    assert server.headers[0]["x-test"] == "1"
    assert response.status == 200
    assert response.result["resultType"] == "complete"


def test_a_json_rpc_error_reads_as_an_error() -> None:
    error = {"code": -32602, "message": "The elicitation answer does not match", "data": {"k": 1}}
    mcp, _ = client_of(lambda message, n: {"error": error})
    result = mcp.tools.call("t", {})
    assert result.error is not None
    assert (result.error.code, result.error.data) == (-32602, {"k": 1})
    assert result.is_error is False
    assert result.ok is False
    assert "does not match" in result.text()
    result.assert_error("INVALID_PARAMS", message="does not match")
    result.assert_error(-32602)
    with pytest.raises(AssertionError, match=r"t\(\{\}\) has no result to read: it failed with"):
        result.json()
    with pytest.raises(
        AssertionError, match="expected JSON-RPC error -32021, got JSON-RPC error -32602"
    ):
        result.assert_error(-32021)
    with pytest.raises(AssertionError, match=r"expected t.* to succeed, but it failed with"):
        result.assert_ok()


def test_a_tool_error_reads_as_a_tool_error() -> None:
    failed = {
        "resultType": "complete",
        "content": [{"type": "text", "text": "There's no ticket T-9."}],
        "isError": True,
    }
    mcp, _ = client_of(lambda message, n: {"result": failed})
    result = mcp.tools.call("t", {"id": "T-9"})
    assert result.is_error and result.error is None
    result.assert_tool_error("no ticket T-9")
    with pytest.raises(
        AssertionError, match=re.escape('returned a tool error: "There\'s no ticket T-9."')
    ):
        result.assert_ok()
    with pytest.raises(
        AssertionError, match="to fail with JSON-RPC error -32602, but it returned a tool error"
    ):
        result.assert_error(-32602)


def test_assert_json_and_assert_asked_show_the_difference() -> None:
    mcp, _ = client_of(ask_then_close)
    mcp.on_elicitation("decline")
    result = mcp.tools.call("close_ticket", {"id": "T-1"})
    result.assert_json({"closed": False}, partial=True).assert_asked("close")
    with pytest.raises(AssertionError) as caught:
        result.assert_json({"id": "T-1", "closed": True})
    assert "closed: expected true, got false" in str(caught.value)
    assert '+  "closed": false' in str(caught.value)
    with pytest.raises(AssertionError, match=r"to ask \['pick'\], it asked \['close'\]"):
        result.assert_asked("pick")


def test_error_names_that_do_not_exist_are_refused() -> None:
    mcp, _ = client_of(lambda message, n: {"error": {"code": -32602, "message": "m"}})
    with pytest.raises(ValueError, match="unknown JSON-RPC error name 'NOPE'"):
        mcp.tools.call("t", {}).assert_error("NOPE")


def test_a_derived_client_keeps_its_own_questions_and_answers() -> None:
    mcp, server = client_of(ask_then_close)
    other = mcp.client(protocol="2099-01-01", client_info={"name": "other", "version": "9"})
    other.on_elicitation("cancel")
    other.tools.call("close_ticket", {"id": "T-1"})
    assert mcp.questions == []
    assert len(other.questions) == 1
    assert server.headers[0]["mcp-protocol-version"] == "2099-01-01"
    assert (
        server.requests[0]["params"]["_meta"]["io.modelcontextprotocol/clientInfo"]["name"]
        == "other"
    )


def test_event_stream_responses_are_read_to_their_last_message() -> None:
    class Streaming:
        def on_post(self, req: falcon.Request, resp: falcon.Response) -> None:
            message = json.loads(req.bounded_stream.read())
            note = {"jsonrpc": "2.0", "method": "notifications/progress", "params": {"progress": 1}}
            final = {"jsonrpc": "2.0", "id": message["id"], "result": done({"ok": 1})}
            resp.content_type = "text/event-stream"
            resp.text = f"event: message\ndata: {json.dumps(note)}\n\ndata: {json.dumps(final)}\n\n"

    app = falcon.App()
    app.add_route("/mcp", Streaming())
    result = McpClient(WsgiTransport(app)).tools.call("t", {})
    assert result.json() == {"ok": 1}
    assert len(result.response.messages) == 2
