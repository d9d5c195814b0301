"""``ctx.log`` forwarding: handler records sent as ``notifications/message`` at the client's level.

Checked through the real WSGI app in both eras (a 2026-07-28 request's ``_meta`` log level, a legacy
session's ``logging/setLevel``), over ``host stdio``, and under a real ``host serve`` with two
gunicorn workers, where the level is set through one worker and the call runs on the other.
"""

from __future__ import annotations

import json
import logging
import os
import signal
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import falcon.testing
import pytest
from mcp.client.client import Client

from host.errors import ProtocolError
from host.protocol.messages import LEVELS, LogForward, mcp_level, read_level
from host.spec import load_project
from support.helpdesk import write_project
from support.legacy import Events, Legacy, json_body, post
from support.modern import Mcp, app_client
from support.servers import Server, host_serve, run_stdio
from support.wire import send, sse

pytestmark = pytest.mark.served

SERVER = """\
kind: server
name: chatty
elicitation: {enabled: true}
"""

TOOLS = """\
kind: tool
name: chatty
description: Logs at every level, then finishes.
annotations: {readOnlyHint: true}
steps:
  - act: work:chatty
---
kind: tool
name: quiet
description: Never logs.
annotations: {readOnlyHint: true}
steps:
  - act: work:quiet
---
kind: tool
name: crashes
description: Logs, then fails with an internal error.
annotations: {readOnlyHint: true}
steps:
  - act: work:crashes
---
kind: tool
name: look_then_ask
description: A read that logs, a question, then an act that logs.
annotations: {destructiveHint: false}
steps:
  - read: found
    call: work:look
  - confirm: go
    message: Go on?
  - act: work:finish
---
kind: tool
name: mixed
description: Progress and log lines, interleaved.
annotations: {readOnlyHint: true}
steps:
  - act: work:mixed
"""

HANDLERS = """\
def chatty(ctx):
    ctx.log.debug("looking closely")
    ctx.log.info("starting %s", "work", extra={"secret": "s3cr3t-extra"})
    ctx.log.warning("running low")
    try:
        raise ValueError("s3cr3t-traceback")
    except ValueError:
        ctx.log.exception("recovered from a hiccup")
    ctx.log.critical("on fire")
    return "done"


def quiet():
    return "quiet"


def crashes(ctx):
    ctx.log.info("about to fail")
    raise RuntimeError("s3cr3t-internals")


def look(ctx):
    ctx.log.info("looking")
    return {"n": 1}


def finish(ctx):
    ctx.log.info("finishing")
    return "finished"


def mixed(ctx):
    ctx.progress(1, 2)
    ctx.log.info("half way")
    ctx.progress(2, 2)
    ctx.log.info("all done")
    return "mixed"
"""

META = {
    "io.modelcontextprotocol/protocolVersion": "2026-07-28",
    "io.modelcontextprotocol/clientCapabilities": {"elicitation": {}},
}
LEVEL_KEY = "io.modelcontextprotocol/logLevel"


def chatty_project(tmp_path: Path) -> tuple[Path, Path]:
    return write_project(tmp_path, SERVER, TOOLS, HANDLERS)


@pytest.fixture
def app(tmp_path: Path) -> falcon.testing.TestClient:
    return app_client(tmp_path, load_project(*chatty_project(tmp_path)))


def modern_call(
    http: falcon.testing.TestClient,
    name: str,
    level: str | None,
    *,
    accept: str = "application/json, text/event-stream",
    **params: Any,
) -> Events:
    meta: dict[str, Any] = dict(META)
    if level is not None:
        meta[LEVEL_KEY] = level
    meta.update(params.pop("meta", {}))
    body = {
        "jsonrpc": "2.0",
        "id": 7,
        "method": "tools/call",
        "params": {"name": name, "arguments": {}, "_meta": meta, **params},
    }
    headers = {**Mcp(http).headers("tools/call", name), "Accept": accept}
    return post(http, headers, body)


def said(messages: list[dict[str, Any]]) -> list[tuple[str, str]]:
    """The (level, data) of each log message, in order."""
    return [
        (m["params"]["level"], m["params"]["data"])
        for m in messages
        if m.get("method") == "notifications/message"
    ]


EVERYTHING = [
    ("debug", "looking closely"),
    ("info", "starting work"),
    ("warning", "running low"),
    ("error", "recovered from a hiccup"),
    ("critical", "on fire"),
]


# --- the parts ------------------------------------------------------------------------------


def test_python_levels_map_onto_mcp_levels() -> None:
    assert [mcp_level(n) for n in (5, 10, 20, 25, 30, 35, 40, 50, 60, 70, 99)] == [
        "debug", "debug", "info", "notice", "warning", "warning", "error", "critical",
        "alert", "emergency", "emergency",
    ]  # fmt: skip
    assert [read_level(level, "x") for level in LEVELS] == list(LEVELS)
    for bad in ("INFO", "verbose", 3, None):
        with pytest.raises(ProtocolError) as raised:
            read_level(bad, "params.level")
        assert raised.value.code == -32602
        assert "params.level must be a log level, one of: debug, info, notice" in str(raised.value)


def test_the_call_logger_forwards_at_the_client_level_and_logs_at_the_server_level(
    caplog: pytest.LogCaptureFixture,
) -> None:
    sent: list[dict[str, Any]] = []
    base = logging.getLogger("host.handler.unit")
    with caplog.at_level(logging.WARNING, logger="host.handler.unit"):
        log = LogForward("debug", "unit", sent.append).logger(base)
        log.debug("tiny %d", 1)
        log.info("small")
        log.error("big")
        log.info("bad %d", "args")  # a handler bug: not forwarded, and no crash
    assert sent == [
        {"level": "debug", "logger": "unit", "data": "tiny 1"},
        {"level": "info", "logger": "unit", "data": "small"},
        {"level": "error", "logger": "unit", "data": "big"},
    ]
    # The server log keeps its own level: only the error reached it, under the handler's name.
    assert [(r.name, r.getMessage()) for r in caplog.records] == [("host.handler.unit", "big")]


def test_a_high_client_level_forwards_only_what_reaches_it() -> None:
    sent: list[dict[str, Any]] = []
    log = LogForward("notice", "unit", sent.append).logger(logging.getLogger("host.handler.u2"))
    log.info("not enough")
    log.log(25, "a notice")
    log.warning("more")
    assert [m["level"] for m in sent] == ["notice", "warning"]


# --- 2026-07-28: a level per request ----------------------------------------------------------


def test_without_a_level_nothing_is_forwarded(app: falcon.testing.TestClient) -> None:
    body = json_body(modern_call(app, "chatty", None))
    assert body["result"]["content"] == [{"type": "text", "text": "done"}]


@pytest.mark.parametrize(
    ("level", "expected"),
    [("debug", EVERYTHING), ("info", EVERYTHING[1:]), ("warning", EVERYTHING[2:]),
     ("critical", EVERYTHING[4:])],
)  # fmt: skip
def test_records_at_or_above_the_request_level_come_before_the_result(
    app: falcon.testing.TestClient, level: str, expected: list[tuple[str, str]]
) -> None:
    events = modern_call(app, "chatty", level)
    assert events.status == "200 OK"
    assert events.headers["content-type"] == "text/event-stream"
    messages = events.rest()
    assert said(messages) == expected
    assert {m["params"]["logger"] for m in messages[:-1]} == {"chatty"}
    assert messages[-1]["id"] == 7
    assert messages[-1]["result"]["content"] == [{"type": "text", "text": "done"}]


def test_forwarded_messages_carry_the_text_only(app: falcon.testing.TestClient) -> None:
    raw = b"".join(modern_call(app, "chatty", "debug").chunks)
    assert b"s3cr3t" not in raw  # neither extra fields nor the traceback
    for frame in raw.split(b"\n\n")[:-2]:
        params = json.loads(frame.split(b"data: ", 1)[1])["params"]
        assert set(params) == {"level", "logger", "data"}


def test_a_crash_forwards_what_the_handler_logged_and_nothing_of_the_host(
    app: falcon.testing.TestClient,
) -> None:
    events = modern_call(app, "crashes", "debug")
    raw = b"".join(events.chunks)
    messages = [json.loads(f.split(b"data: ", 1)[1]) for f in raw.split(b"\n\n") if f]
    assert said(messages) == [("info", "about to fail")]
    assert b"s3cr3t" not in raw and b"Traceback" not in raw and b"handler failed" not in raw
    final = messages[-1]["result"]
    assert final["isError"] is True and "internal error (incident " in final["content"][0]["text"]


def test_a_call_that_never_logs_answers_with_plain_json(app: falcon.testing.TestClient) -> None:
    body = json_body(modern_call(app, "quiet", "debug"))
    assert body["result"]["content"] == [{"type": "text", "text": "quiet"}]


def test_without_an_event_stream_in_accept_nothing_is_forwarded(
    app: falcon.testing.TestClient,
) -> None:
    body = json_body(modern_call(app, "chatty", "debug", accept="application/json"))
    assert body["result"]["content"] == [{"type": "text", "text": "done"}]


def test_an_unknown_level_is_invalid_params(app: falcon.testing.TestClient) -> None:
    events = modern_call(app, "chatty", "loud")
    assert events.status.startswith("400")
    error = json_body(events)["error"]
    assert error["code"] == -32602 and LEVEL_KEY in error["message"]


def test_progress_and_messages_share_the_stream_in_order(app: falcon.testing.TestClient) -> None:
    messages = modern_call(app, "mixed", "info", meta={"progressToken": "p"}).rest()
    kinds = [
        (m["method"], m["params"].get("progress", m["params"].get("data"))) for m in messages[:-1]
    ]
    assert kinds == [
        ("notifications/progress", 1),
        ("notifications/message", "half way"),
        ("notifications/progress", 2),
        ("notifications/message", "all done"),
    ]
    assert messages[-1]["result"]["content"] == [{"type": "text", "text": "mixed"}]


def test_each_round_forwards_at_its_own_request_level(app: falcon.testing.TestClient) -> None:
    first = modern_call(app, "look_then_ask", "info").rest()
    assert said(first) == [("info", "looking")]
    asked = first[-1]["result"]
    assert asked["resultType"] == "input_required"
    answer = {"go": {"action": "accept", "content": {"confirm": True}}}
    final = modern_call(
        app, "look_then_ask", "info", inputResponses=answer, requestState=asked["requestState"]
    ).rest()
    assert said(final) == [("info", "looking"), ("info", "finishing")]
    # The same final round without a level: the state remembers nothing of the first one's.
    again = modern_call(
        app, "look_then_ask", None, inputResponses=answer, requestState=asked["requestState"]
    )
    assert json_body(again)["result"]["content"] == [{"type": "text", "text": "finished"}]


def test_discover_declares_logging(app: falcon.testing.TestClient) -> None:
    response = Mcp(app).request("server/discover")
    assert response.json["result"]["capabilities"]["logging"] == {}


# --- legacy sessions: logging/setLevel --------------------------------------------------------


def legacy_call(legacy: Legacy, name: str, arguments: Any = None, **headers: str) -> Events:
    body = legacy.body("tools/call", {"name": name, "arguments": arguments or {}})
    return post(legacy.http, legacy.headers(**headers), body)


@pytest.mark.parametrize("version", ["2025-11-25", "2025-06-18", "2025-03-26"])
def test_a_session_hears_its_handlers_once_it_set_a_level(
    app: falcon.testing.TestClient, version: str
) -> None:
    legacy = Legacy(app)
    opened = legacy.initialize(version, {})
    assert opened["capabilities"]["logging"] == {}
    before = json_body(legacy_call(legacy, "chatty"))
    assert before["result"]["content"] == [{"type": "text", "text": "done"}]
    assert legacy.result(legacy.request("logging/setLevel", {"level": "warning"})) == {}
    events = legacy_call(legacy, "chatty")
    assert events.headers["content-type"] == "text/event-stream"
    messages = events.rest()
    assert said(messages) == EVERYTHING[2:]
    assert messages[-1]["id"] == legacy.next_id - 1 and "result" in messages[-1]
    # Lowering the level later takes effect on the next call; other sessions hear nothing.
    legacy.result(legacy.request("logging/setLevel", {"level": "debug"}))
    assert said(legacy_call(legacy, "chatty").rest()) == EVERYTHING
    other = Legacy(app)
    other.initialize(version, {})
    assert "result" in json_body(legacy_call(other, "chatty"))


def test_a_bad_level_is_refused_and_changes_nothing(app: falcon.testing.TestClient) -> None:
    legacy = Legacy(app)
    legacy.initialize()
    response = legacy.request("logging/setLevel", {"level": "chatty"})
    assert response.status_code == 200
    assert response.json["error"]["code"] == -32602
    assert "result" in json_body(legacy_call(legacy, "chatty"))


def test_a_session_question_then_its_later_rounds_log_on_one_stream(
    app: falcon.testing.TestClient,
) -> None:
    legacy = Legacy(app)
    legacy.initialize("2025-11-25")
    legacy.result(legacy.request("logging/setLevel", {"level": "info"}))
    events = legacy_call(legacy, "look_then_ask")
    assert events.next()["params"]["data"] == "looking"
    question = events.next()
    assert question["method"] == "elicitation/create"
    assert (
        legacy.answer(question, {"action": "accept", "content": {"confirm": True}}).status_code
        == 202
    )
    rest = events.rest()
    assert said(rest) == [("info", "looking"), ("info", "finishing")]
    assert rest[-1]["result"]["content"] == [{"type": "text", "text": "finished"}]


def test_the_fallback_answer_streams_the_resumed_calls_messages(
    app: falcon.testing.TestClient,
) -> None:
    legacy = Legacy(app)
    legacy.initialize("2025-03-26", {})
    legacy.result(legacy.request("logging/setLevel", {"level": "info"}))
    asked = legacy_call(legacy, "look_then_ask").rest()
    assert said(asked) == [("info", "looking")]
    eid = json.loads(asked[-1]["result"]["content"][1]["text"])["elicitationId"]
    answer = {"elicitationId": eid, "action": "accept", "content": {"confirm": True}}
    messages = legacy_call(legacy, "sendElicitationResult", answer).rest()
    assert said(messages) == [("info", "looking"), ("info", "finishing")]
    assert messages[-1]["result"]["content"] == [{"type": "text", "text": "finished"}]


# --- stdio ----------------------------------------------------------------------------------


def test_stdio_writes_messages_before_each_response(tmp_path: Path) -> None:
    specs, handlers = chatty_project(tmp_path)
    lines = [
        {"jsonrpc": "2.0", "id": 1, "method": "tools/call",
         "params": {"name": "chatty", "_meta": {**META, LEVEL_KEY: "error"}}},
        {"jsonrpc": "2.0", "id": 2, "method": "tools/call",
         "params": {"name": "chatty", "_meta": META}},
        {"jsonrpc": "2.0", "id": 3, "method": "initialize",
         "params": {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {}}},
        {"jsonrpc": "2.0", "id": 4, "method": "logging/setLevel", "params": {"level": "critical"}},
        {"jsonrpc": "2.0", "id": 5, "method": "tools/call", "params": {"name": "chatty"}},
    ]  # fmt: skip
    stdout = run_stdio(tmp_path, specs, handlers, lines)
    messages = [json.loads(line) for line in stdout.splitlines()]
    # NOTE: calls run on threads of their own, so only each call's own order is fixed: call 1
    # (level error) sends an error and a critical, call 2 (no level) nothing, call 5 (the
    # session's level, critical) one critical.
    assert sorted(said(messages)) == [
        ("critical", "on fire"),
        ("critical", "on fire"),
        ("error", "recovered from a hiccup"),
    ]
    ids = [m.get("id") for m in messages]
    assert sorted(i for i in ids if i is not None) == [1, 2, 3, 4, 5]
    # Each call's messages come before its own response, whichever call answers first.
    before_1, before_5 = said(messages[: ids.index(1)]), said(messages[: ids.index(5)])
    assert ("error", "recovered from a hiccup") in before_1
    assert ("critical", "on fire") in before_1 and ("critical", "on fire") in before_5
    later = max(ids.index(1), ids.index(5))
    assert said(messages[:later]).count(("critical", "on fire")) == 2
    assert b"s3cr3t" not in stdout


# --- gunicorn: the level set through one worker, the call on another ---------------------------


@pytest.fixture(scope="module")
def two_workers(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    """``host serve`` of the chatty project with two gunicorn workers."""
    tmp_path = tmp_path_factory.mktemp("logging-serve")
    specs, handlers = chatty_project(tmp_path)
    with host_serve(
        tmp_path, "serve", "--workers", "2", "--threads", "4", specs=specs, handlers=handlers
    ) as server:
        yield server


def test_a_level_set_through_one_worker_applies_to_a_call_on_the_other(
    two_workers: Server,
) -> None:
    init = {
        "jsonrpc": "2.0",
        "id": 0,
        "method": "initialize",
        "params": {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {}},
    }
    first = two_workers.connect()
    opened = send(first, init)
    session = opened.getheader("Mcp-Session-Id")
    opened.read()
    assert session
    seen = len(two_workers.log_lines("log_level_set"))
    level = {"jsonrpc": "2.0", "id": 1, "method": "logging/setLevel", "params": {"level": "info"}}
    set_level = send(first, level, **{"Mcp-Session-Id": session})
    assert json.loads(set_level.read())["result"] == {}
    home = two_workers.wait_for("log_level_set", seen + 1)[-1]["pid"]
    # NOTE: with the worker that took the level paused, the other worker accepts the second
    # connection (the trick of servers.connections_on_two_workers).
    calls = len(two_workers.log_lines("tool_call"))
    os.kill(home, signal.SIGSTOP)
    try:
        other = two_workers.connect()
        call = {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "chatty"}}
        response = send(other, call, **{"Mcp-Session-Id": session})
        assert response.getheader("Content-Type") == "text/event-stream"
        messages = list(sse(response))
    finally:
        os.kill(home, signal.SIGCONT)
    assert said(messages) == EVERYTHING[1:]
    assert messages[-1]["id"] == 2 and "result" in messages[-1]
    ran = two_workers.wait_for("tool_call", calls + 1)[-1]
    assert ran["tool"] == "chatty" and ran["pid"] != home
    first.close()
    other.close()


@pytest.mark.filterwarnings("ignore:The logging capability is deprecated")
@pytest.mark.parametrize("revision", ["2026-07-28", "2025-11-25"])
def test_the_official_sdk_client_hears_the_messages(two_workers: Server, revision: str) -> None:
    heard: list[tuple[str, str | None, Any]] = []

    async def on_log(params: Any) -> None:
        heard.append((params.level, params.logger, params.data))

    async def main() -> Any:
        url = f"http://127.0.0.1:{two_workers.port}/mcp"
        with anyio.fail_after(30):
            if revision == "2026-07-28":
                client = Client(url, mode=revision, logging_callback=on_log, log_level="warning")
                async with client:
                    return await client.call_tool("chatty", {})
            async with Client(url, mode="legacy", logging_callback=on_log) as client:
                assert client.protocol_version == revision
                await client.set_logging_level("warning")
                return await client.call_tool("chatty", {})

    result = anyio.run(main)
    assert not result.is_error
    assert heard == [(level, "chatty", data) for level, data in EVERYTHING[2:]]
