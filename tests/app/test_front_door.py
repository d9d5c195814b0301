"""The front door (``POST /mcp`` written without Falcon) answers byte for byte as Falcon does."""

from __future__ import annotations

import io
import json
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

import falcon
import falcon.testing
import pytest

from host.auth import AuthSettings
from host.auth.tokenfile import create_token
from host.limits import LimitSettings
from host.web.app import create_app
from host.web.front import HostApp
from support.helpdesk import HELPDESK, settings_for, use_tmp_data
from support.modern import VERSION

META = {
    "io.modelcontextprotocol/protocolVersion": VERSION,
    "io.modelcontextprotocol/clientCapabilities": {},
}
CALL = {"name": "list_outbox", "arguments": {}, "_meta": META}


def message(method: str, params: Any = None, **extra: Any) -> bytes:
    body: dict[str, Any] = {"jsonrpc": "2.0", "id": 3, "method": method, **extra}
    if params is not None:
        body["params"] = params
    return json.dumps(body).encode()


def routing(method: str, name: str | None = None) -> dict[str, str]:
    headers = {
        "Content-Type": "application/json",
        "Accept": "application/json, text/event-stream",
        "MCP-Protocol-Version": VERSION,
        "Mcp-Method": method,
    }
    if name is not None:
        headers["Mcp-Name"] = name
    return headers


def served(
    app: Callable[..., Iterable[bytes]], body: bytes, headers: dict[str, str], **env_: str
) -> tuple[str, list[tuple[str, str]], bytes]:
    """The status line, header list and body ``app`` answers a ``POST /mcp`` with."""
    env = falcon.testing.create_environ(path="/mcp", method="POST", headers=headers, body=body)
    env["wsgi.input"] = io.BytesIO(body)
    env.update(env_)
    started: list[Any] = []
    chunks = app(env, lambda status, headers, *_: started.append((status, headers)))
    out = b"".join(chunks)
    return started[0][0], started[0][1], out


def both(app: HostApp, body: bytes, headers: dict[str, str], **env: str) -> tuple[Any, Any]:
    """What the front door answers, and what Falcon's own path answers."""
    front = served(app, body, headers, **env)
    slow = served(lambda env, start: falcon.App.__call__(app, env, start), body, headers, **env)
    return front, slow


@pytest.fixture
def app(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> HostApp:
    use_tmp_data(tmp_path, monkeypatch)
    made = create_app(settings=settings_for(tmp_path), project=HELPDESK)
    assert isinstance(made, HostApp)
    return made


CASES: dict[str, tuple[bytes, dict[str, str]]] = {
    "a call": (message("tools/call", CALL), routing("tools/call", "list_outbox")),
    "a list": (message("tools/list", {"_meta": META}), routing("tools/list")),
    "a notification": (
        json.dumps({"jsonrpc": "2.0", "method": "notifications/x"}).encode(),
        routing("notifications/x"),
    ),
    "not JSON": (b"{nope", routing("tools/list")),
    "a duplicate key": (b'{"id": 1, "id": 2}', routing("tools/list")),
    "an unknown method": (message("nope/nope", {"_meta": META}), routing("nope/nope")),
    "a header mismatch": (message("tools/list", {"_meta": META}), routing("tools/call")),
    "a foreign origin": (
        message("tools/list", {"_meta": META}),
        {**routing("tools/list"), "Origin": "https://elsewhere.example"},
    ),
    "no JSON accepted": (
        message("tools/list", {"_meta": META}),
        {**routing("tools/list"), "Accept": "text/html"},
    ),
    "a form body": (
        b"a=1",
        {**routing("tools/list"), "Content-Type": "application/x-www-form-urlencoded"},
    ),
    "an empty body": (b"", routing("tools/list")),
    "too large": (b" " * (1024 * 1024 + 1), routing("tools/list")),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_the_front_door_answers_as_falcon_does(app: HostApp, case: str) -> None:
    body, headers = CASES[case]
    front, slow = both(app, body, headers)
    assert front == slow


def test_a_plain_call_is_answered_by_the_front_door(
    app: HostApp, monkeypatch: pytest.MonkeyPatch
) -> None:
    def refuse(*args: Any, **kwargs: Any) -> Any:
        raise AssertionError("Falcon was asked")

    monkeypatch.setattr(falcon.App, "__call__", refuse)
    status, headers, body = served(app, *CASES["a call"])
    assert status == "200 OK"
    assert headers[0] == ("cache-control", "no-store")
    assert dict(headers)["content-length"] == str(len(body))
    assert json.loads(body)["result"]["resultType"] == "complete"


@pytest.mark.parametrize("length", ["", "-1", " 12", "twelve", "\u0661"])
def test_a_length_falcon_must_judge_goes_to_falcon(
    app: HostApp, monkeypatch: pytest.MonkeyPatch, length: str
) -> None:
    asked: list[str] = []
    monkeypatch.setattr(app, "_post", lambda *args: asked.append("front"))
    front, slow = both(app, *CASES["a list"], CONTENT_LENGTH=length)
    assert front == slow
    assert front[0] == "400 Bad Request"
    assert asked == []


def test_an_exception_is_handled_by_falcon(app: HostApp, monkeypatch: pytest.MonkeyPatch) -> None:
    resource = app.resource

    def broken(*args: Any) -> Any:
        raise RuntimeError("boom")

    monkeypatch.setattr(resource.endpoint, "handle", broken)
    front, slow = both(app, *CASES["a call"])
    assert front == slow
    assert front[0] == "500 Internal Server Error"


def test_refusals_with_auth_answer_as_falcon_does(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    use_tmp_data(tmp_path, monkeypatch)
    tokens = tmp_path / "tokens"
    alice, _ = create_token(tokens, "alice", [])
    auth = AuthSettings(tokens_file=tokens)
    app = create_app(settings=settings_for(tmp_path, auth=auth), project=HELPDESK)
    busy = create_app(
        settings=settings_for(tmp_path, auth=auth, limits=LimitSettings(calls_in_flight=0)),
        project=HELPDESK,
    )
    assert isinstance(app, HostApp) and isinstance(busy, HostApp)
    body, headers = CASES["a call"]
    signed = {**headers, "Authorization": f"Bearer {alice}"}
    for made, sent, status in (
        (app, headers, "401 Unauthorized"),
        (app, {**signed, "Authorization": "Bearer nope"}, "401 Unauthorized"),
        (app, signed, "200 OK"),
        (busy, signed, "429 Too Many Requests"),
    ):
        front, slow = both(made, body, sent)
        assert front == slow
        assert front[0] == status
