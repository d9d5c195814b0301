"""``ctx.progress``: reports sent as ``notifications/progress`` before the result, as they happen.

Checked through the real WSGI app in both eras (streams read lazily, as a client reads them), over
``host stdio``, and under real gunicorn gthread workers, where a handler that waits after its first
report proves that the report reached the client while the call was still running.
"""

from __future__ import annotations

import http.client
import json
import logging
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import anyio
import falcon.testing
import pytest
from mcp.client.client import Client

from host.machine import CallContext
from host.protocol import RequestContext, streams
from host.protocol.streams import Notifier, progress_token
from host.spec import load_project
from support import servers
from support.helpdesk import write_project
from support.legacy import Events, Legacy, json_body, post
from support.modern import Mcp, app_client
from support.servers import run_stdio
from support.wire import send, sse

pytestmark = pytest.mark.served

SERVER = """\
kind: server
name: progress
elicitation: {enabled: true}
"""

TOOLS = """\
kind: tool
name: crunch
description: Work in steps, reporting each one.
annotations: {readOnlyHint: true}
input:
  properties:
    steps: {type: integer, default: 3}
    gate: {type: string, description: A file to wait for after the first report}
steps:
  - act: work:crunch
---
kind: tool
name: backwards
description: Reports that do not always increase.
annotations: {readOnlyHint: true}
steps:
  - act: work:backwards
---
kind: tool
name: quiet
description: Never reports.
annotations: {readOnlyHint: true}
steps:
  - act: work:quiet
---
kind: tool
name: confirm_then_crunch
description: Asks first, then works in steps.
annotations: {destructiveHint: false}
input:
  properties:
    steps: {type: integer, default: 3}
steps:
  - confirm: go
    message: Crunch?
  - act: work:crunch
---
kind: tool
name: look_then_ask
description: A read that reports, then a question.
annotations: {destructiveHint: false}
steps:
  - read: found
    call: work:look
  - confirm: go
    message: Go on?
  - act: work:quiet
---
kind: tool
name: bad_progress
description: Reports progress as a text.
annotations: {readOnlyHint: true}
steps:
  - act: work:bad_progress
---
kind: tool
name: fails_midway
description: Reports, then fails.
annotations: {readOnlyHint: true}
steps:
  - act: work:fails_midway
"""

HANDLERS = """\
import os
import time

from host import ToolError


def crunch(ctx, steps, gate=None):
    for step in range(1, steps + 1):
        ctx.progress(step, total=steps, message=f"step {step} of {steps}")
        if step == 1 and gate:
            deadline = time.monotonic() + 10
            while not os.path.exists(gate):
                if time.monotonic() > deadline:
                    raise ToolError("the gate never opened")
                time.sleep(0.01)
    return {"steps": steps}


def backwards(ctx):
    for value in (5, 3, 5, 7):
        ctx.progress(value, 10)
    return "done"


def quiet():
    return "quiet"


def look(ctx):
    ctx.progress(1, message="looking")
    return {"n": 1}


def bad_progress(ctx):
    ctx.progress("half")
    return "never"


def fails_midway(ctx):
    ctx.progress(1, 2)
    raise RuntimeError("boom")
"""

MODERN_META = {
    "io.modelcontextprotocol/protocolVersion": "2026-07-28",
    "io.modelcontextprotocol/clientCapabilities": {"elicitation": {}},
}


def work_project(tmp_path: Path) -> tuple[Path, Path]:
    return write_project(tmp_path, SERVER, TOOLS, HANDLERS)


@pytest.fixture
def app(tmp_path: Path) -> falcon.testing.TestClient:
    return app_client(tmp_path, load_project(*work_project(tmp_path)))


def modern_call(
    http: falcon.testing.TestClient,
    name: str,
    arguments: Mapping[str, Any] | None = None,
    *,
    token: Any = "tok",
    accept: str = "application/json, text/event-stream",
    capabilities: Mapping[str, Any] | None = None,
    **params: Any,
) -> Events:
    meta: dict[str, Any] = dict(MODERN_META)
    if capabilities is not None:
        meta["io.modelcontextprotocol/clientCapabilities"] = dict(capabilities)
    if token is not None:
        meta["progressToken"] = token
    body = {
        "jsonrpc": "2.0",
        "id": 9,
        "method": "tools/call",
        "params": {"name": name, "arguments": dict(arguments or {}), "_meta": meta, **params},
    }
    headers = {**Mcp(http).headers("tools/call", name), "Accept": accept}
    return post(http, headers, body)


def notes(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [m["params"] for m in messages if m.get("method") == "notifications/progress"]


def steps(token: Any, count: int = 3) -> list[dict[str, Any]]:
    return [
        {"progressToken": token, "progress": i, "total": count, "message": f"step {i} of {count}"}
        for i in range(1, count + 1)
    ]


# --- the parts ------------------------------------------------------------------------------


def test_ctx_progress_checks_its_arguments_and_without_a_sink_does_nothing() -> None:
    ctx = CallContext()
    ctx.progress(1)
    ctx.progress(2.5, total=10, message="half way")
    sent: list[tuple[Any, ...]] = []
    ctx = CallContext(report=lambda *args: sent.append(args))
    ctx.progress(3, 10, "more")
    assert sent == [(3, 10, "more")]
    bad_calls: list[tuple[tuple[Any, ...], type[Exception]]] = [
        (("50",), TypeError),
        ((True,), TypeError),
        ((1, "10"), TypeError),
        ((1, None, 5), TypeError),
        ((float("nan"),), ValueError),
        ((1, float("inf")), ValueError),
    ]
    for bad, error in bad_calls:
        with pytest.raises(error, match=r"^ctx\.progress: "):
            ctx.progress(*bad)
    assert len(sent) == 1


def test_reports_must_increase(caplog: pytest.LogCaptureFixture) -> None:
    progress = Notifier("t", "tool")

    def call(report: Notifier) -> str:
        for value in (1, 3, 2, 3, 4.5):
            report(value, None, None)
        return "end"

    with caplog.at_level(logging.WARNING):
        running = progress.start(call)
        first = running.first()
        rest = list(_drain(running.events(5.0)))
    assert first is not None
    assert [m["params"]["progress"] for m in [first, *rest[:-1]]] == [1, 3, 4.5]
    assert rest[-1] == "end"
    dropped = [vars(r) for r in caplog.records if getattr(r, "event", "") == "progress_dropped"]
    assert [(d["progress"], d["last"]) for d in dropped] == [(2, 3), (3, 3)]


def _drain(events: Iterator[Any]) -> Iterator[Any]:
    """Every event of a generator, then its return value."""
    while True:
        try:
            yield next(events)
        except StopIteration as stop:
            yield stop.value
            return


def test_tokens_and_accept_headers() -> None:
    assert progress_token({"_meta": {"progressToken": "a"}}) == "a"
    assert progress_token({"_meta": {"progressToken": 0}}) == 0
    not_tokens: list[dict[str, Any]] = [
        {},
        {"_meta": None},
        {"_meta": {"progressToken": True}},
        {"_meta": {"progressToken": 1.5}},
    ]
    for params in not_tokens:
        assert progress_token(params) is None

    def accepts_stream(headers: dict[str, str]) -> bool:
        return RequestContext.http(headers).streams

    assert accepts_stream({"accept": "application/json, text/event-stream;q=0.9"})
    assert not accepts_stream({"accept": "application/json"})
    assert not accepts_stream({"accept": "*/*"})
    assert not accepts_stream({})


# --- 2026-07-28 -----------------------------------------------------------------------------


@pytest.mark.parametrize("token", ["tok-1", 42])
def test_reports_come_on_the_request_stream_before_the_result(
    app: falcon.testing.TestClient, token: Any
) -> None:
    events = modern_call(app, "crunch", token=token)
    assert events.status == "200 OK"
    assert events.headers["content-type"] == "text/event-stream"
    assert events.headers["x-accel-buffering"] == "no"
    messages = events.rest()
    assert notes(messages) == steps(token)
    final = messages[-1]
    assert final["id"] == 9 and len(messages) == 4
    assert final["result"]["resultType"] == "complete"
    assert final["result"]["structuredContent"] == {"steps": 3}


def test_without_a_token_or_an_event_stream_the_reply_is_plain_json(
    app: falcon.testing.TestClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    without = json_body(modern_call(app, "crunch", token=None))
    only_json = json_body(modern_call(app, "crunch", accept="application/json"))
    assert without == only_json
    assert without["result"]["structuredContent"] == {"steps": 3}

    # NOTE: a call without a token never leaves its request's thread.
    def refuse(*args: Any) -> Any:
        raise AssertionError("a call without a progress token ran on a helper thread")

    monkeypatch.setattr(streams.Notifier, "start", refuse)
    assert json_body(modern_call(app, "crunch", token=None)) == without


def test_a_call_that_never_reports_answers_with_plain_json(app: falcon.testing.TestClient) -> None:
    body = json_body(modern_call(app, "quiet"))
    assert body["result"]["content"] == [{"type": "text", "text": "quiet"}]


def test_an_error_before_any_report_keeps_its_http_status(app: falcon.testing.TestClient) -> None:
    streamed = modern_call(app, "nope")
    plain = modern_call(app, "nope", token=None)
    assert streamed.status == plain.status and streamed.status.startswith("4")
    assert json_body(streamed) == json_body(plain)


def test_an_error_after_a_report_ends_the_stream(app: falcon.testing.TestClient) -> None:
    events = modern_call(app, "look_then_ask", capabilities={})
    assert events.headers["content-type"] == "text/event-stream"
    note, final = events.rest()
    assert note["params"] == {"progressToken": "tok", "progress": 1, "message": "looking"}
    assert final["id"] == 9 and final["error"]["code"] == -32021


def test_a_handler_failing_after_a_report_ends_with_an_incident(
    app: falcon.testing.TestClient,
) -> None:
    note, final = modern_call(app, "fails_midway").rest()
    assert note["params"] == {"progressToken": "tok", "progress": 1, "total": 2}
    assert final["result"]["isError"] is True
    assert "internal error (incident " in final["result"]["content"][0]["text"]


def test_a_bad_report_is_a_handler_bug(
    app: falcon.testing.TestClient, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.ERROR):
        body = json_body(modern_call(app, "bad_progress"))
    assert body["result"]["isError"] is True
    (failed,) = [r for r in caplog.records if r.getMessage() == "handler failed"]
    assert failed.exc_info and "progress must be a number, not str" in str(failed.exc_info[1])


def test_reports_that_do_not_increase_are_dropped(app: falcon.testing.TestClient) -> None:
    messages = modern_call(app, "backwards").rest()
    assert [n["progress"] for n in notes(messages)] == [5, 7]
    assert messages[-1]["result"]["content"] == [{"type": "text", "text": "done"}]


def test_the_round_that_acts_streams_its_reports(app: falcon.testing.TestClient) -> None:
    asked = json_body(modern_call(app, "confirm_then_crunch", {"steps": 2}))["result"]
    assert asked["resultType"] == "input_required"
    messages = modern_call(
        app,
        "confirm_then_crunch",
        {"steps": 2},
        token="round-2",
        inputResponses={"go": {"action": "accept", "content": {"confirm": True}}},
        requestState=asked["requestState"],
    ).rest()
    assert notes(messages) == steps("round-2", 2)
    assert messages[-1]["result"]["structuredContent"] == {"steps": 2}


# --- legacy sessions ------------------------------------------------------------------------


def legacy_call(legacy: Legacy, name: str, arguments: Any, token: Any, **headers: str) -> Events:
    body = legacy.body(
        "tools/call", {"name": name, "arguments": arguments, "_meta": {"progressToken": token}}
    )
    return post(legacy.http, legacy.headers(**headers), body)


@pytest.mark.parametrize("version", ["2025-11-25", "2025-06-18", "2025-03-26"])
def test_legacy_reports_come_on_the_post_stream(
    app: falcon.testing.TestClient, version: str
) -> None:
    legacy = Legacy(app)
    legacy.initialize(version, {})
    events = legacy_call(legacy, "crunch", {}, 7)
    assert events.headers["content-type"] == "text/event-stream"
    messages = events.rest()
    assert notes(messages) == steps(7)
    assert messages[-1]["id"] == legacy.next_id - 1
    assert "resultType" not in messages[-1]["result"]
    plain = legacy_call(legacy, "crunch", {}, 7, Accept="application/json")
    assert "result" in json_body(plain)


def test_legacy_question_then_reports_on_one_stream(app: falcon.testing.TestClient) -> None:
    legacy = Legacy(app)
    legacy.initialize("2025-11-25")
    events = legacy_call(legacy, "confirm_then_crunch", {"steps": 2}, "q")
    question = events.next()
    assert question["method"] == "elicitation/create"
    answered = legacy.answer(question, {"action": "accept", "content": {"confirm": True}})
    assert answered.status_code == 202
    messages = events.rest()
    assert notes(messages) == steps("q", 2)
    assert messages[-1]["result"]["structuredContent"] == {"steps": 2}


def test_legacy_reports_before_a_question_share_its_stream(app: falcon.testing.TestClient) -> None:
    legacy = Legacy(app)
    legacy.initialize("2025-11-25")
    events = legacy_call(legacy, "look_then_ask", {}, "r")
    assert events.next()["params"] == {"progressToken": "r", "progress": 1, "message": "looking"}
    question = events.next()
    assert question["method"] == "elicitation/create"
    assert legacy.answer(question, {"action": "decline"}).status_code == 202
    # NOTE: the second round's read reports 1 again: not an increase, so it is dropped.
    (final,) = events.rest()
    assert final["result"]["content"][0]["text"].startswith("The user declined (go)")


def test_the_fallback_answer_streams_the_resumed_call(app: falcon.testing.TestClient) -> None:
    legacy = Legacy(app)
    legacy.initialize("2025-03-26", {})
    asked = legacy.call("confirm_then_crunch", {"steps": 2})
    eid = json.loads(asked["content"][1]["text"])["elicitationId"]
    answer = {"elicitationId": eid, "action": "accept", "content": {"confirm": True}}
    messages = legacy_call(legacy, "sendElicitationResult", answer, "fb").rest()
    assert notes(messages) == steps("fb", 2)
    assert json.loads(messages[-1]["result"]["content"][0]["text"]) == {"steps": 2}


# --- stdio ----------------------------------------------------------------------------------


def test_stdio_writes_reports_before_each_response(tmp_path: Path) -> None:
    specs, handlers = work_project(tmp_path)
    lines = [
        {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "tools/call",
            "params": {"name": "crunch", "_meta": {**MODERN_META, "progressToken": "m"}},
        },
        {
            "jsonrpc": "2.0",
            "id": 2,
            "method": "initialize",
            "params": {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {}},
        },
        {
            "jsonrpc": "2.0",
            "id": 3,
            "method": "tools/call",
            "params": {"name": "crunch", "_meta": {"progressToken": "l"}},
        },
        {"jsonrpc": "2.0", "id": 4, "method": "tools/call", "params": {"name": "crunch"}},
    ]
    stdout = run_stdio(tmp_path, specs, handlers, lines)
    messages = [json.loads(line) for line in stdout.splitlines()]
    for token, request_id in (("m", 1), ("l", 3)):
        mine = [
            m
            for m in messages
            if m.get("id") == request_id or m.get("params", {}).get("progressToken") == token
        ]
        assert notes(mine) == steps(token)
        assert mine[-1]["id"] == request_id and "result" in mine[-1]
    assert not [m for m in messages if m.get("method") and m["params"]["progressToken"] not in "ml"]
    assert {m.get("id") for m in messages} == {None, 1, 2, 3, 4}


# --- gunicorn -------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def gunicorn(tmp_path_factory: pytest.TempPathFactory) -> Iterator[int]:
    """``gunicorn host.web.wsgi:app`` with one gthread worker, on 127.0.0.1; its port."""
    tmp_path = tmp_path_factory.mktemp("progress-gunicorn")
    specs, handlers = work_project(tmp_path)
    with servers.gunicorn(
        tmp_path, "gunicorn", "--workers", "1", "--worker-class", "gthread", "--threads", "4",
        "--timeout", "30", HOST_SPECS=str(specs), HOST_HANDLERS=str(handlers),
        HOST_DATA_DIR=str(tmp_path / "data"), HOST_SECRET="progress-test-secret-" + "0" * 24,
    ) as server:  # fmt: skip
        yield server.port


def test_under_gunicorn_the_first_report_arrives_while_the_handler_waits(
    gunicorn: int, tmp_path: Path
) -> None:
    gate = tmp_path / "gate-modern"
    conn = http.client.HTTPConnection("127.0.0.1", gunicorn, timeout=15)
    params = {
        "name": "crunch",
        "arguments": {"gate": str(gate)},
        "_meta": {**MODERN_META, "progressToken": "g"},
    }
    headers = {
        "MCP-Protocol-Version": "2026-07-28",
        "Mcp-Method": "tools/call",
        "Mcp-Name": "crunch",
    }
    body = {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": params}
    response = send(conn, body, **headers)
    assert response.status == 200
    assert response.getheader("Content-Type") == "text/event-stream"
    messages = sse(response)
    first = next(messages)
    # The handler is still waiting for the gate: this report cannot have come with the result.
    assert first["params"] == steps("g")[0]
    gate.touch()
    rest = list(messages)
    assert notes(rest) == steps("g")[1:]
    assert rest[-1]["id"] == 1 and rest[-1]["result"]["structuredContent"] == {"steps": 3}
    conn.close()


def test_under_gunicorn_a_legacy_session_gets_reports_as_they_come(
    gunicorn: int, tmp_path: Path
) -> None:
    gate = tmp_path / "gate-legacy"
    conn = http.client.HTTPConnection("127.0.0.1", gunicorn, timeout=15)
    init = {
        "jsonrpc": "2.0",
        "id": 0,
        "method": "initialize",
        "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {}},
    }
    opened = send(conn, init)
    session = opened.getheader("Mcp-Session-Id")
    opened.read()
    assert session
    headers = {"Mcp-Session-Id": session, "MCP-Protocol-Version": "2025-06-18"}
    params = {"name": "crunch", "arguments": {"gate": str(gate)}, "_meta": {"progressToken": 5}}
    body = {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": params}
    response = send(conn, body, **headers)
    assert response.getheader("Content-Type") == "text/event-stream"
    messages = sse(response)
    assert next(messages)["params"] == steps(5)[0]
    gate.touch()
    rest = list(messages)
    assert notes(rest) == steps(5)[1:]
    assert rest[-1]["result"]["structuredContent"] == {"steps": 3}
    conn.close()


@pytest.mark.parametrize("revision", ["2026-07-28", "2025-11-25", "2025-03-26"])
def test_the_official_sdk_client_hears_every_report_first(
    gunicorn: int, revision: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    if revision != "2026-07-28":
        monkeypatch.setattr("mcp.client.session.LATEST_HANDSHAKE_VERSION", revision)
    heard: list[tuple[float, float | None, str | None]] = []

    async def on_progress(progress: float, total: float | None, message: str | None) -> None:
        heard.append((progress, total, message))

    async def main() -> Any:
        mode = "2026-07-28" if revision == "2026-07-28" else "legacy"
        with anyio.fail_after(30):
            async with Client(f"http://127.0.0.1:{gunicorn}/mcp", mode=mode) as client:
                assert client.protocol_version == revision
                return await client.call_tool("crunch", {}, progress_callback=on_progress)

    result = anyio.run(main)
    assert [(p, t, m) for p, t, m in heard] == [(i, 3, f"step {i} of 3") for i in (1, 2, 3)]
    assert not result.is_error
