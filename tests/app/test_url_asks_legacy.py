"""URL asks on the legacy handshake, in process: 2025-11-25's URL mode, and older revisions.

A 2025-11-25 session that declared ``elicitation.url`` gets an ``elicitation/create`` with
``mode: url``, the page's URL and an ``elicitationId`` on the call's stream; after its accept the
stream carries ``notifications/elicitation/complete`` once the page is submitted, then the result.
Not submitted within ``wait``: -32042 naming the same page, and a retry of the call goes on at
once when it was submitted meanwhile. Sessions without URL mode get -32021, never the fallback.
"""

from __future__ import annotations

import threading
import time
from pathlib import Path
from typing import Any

import falcon.testing
import pytest

from support.asks import AskHost, url_host
from support.legacy import Legacy

SECRET = "legacy-k3y-5d1f0e2a9b"
URL = {"elicitation": {"form": {}, "url": {}}}


@pytest.fixture
def host(tmp_path: Path) -> AskHost:
    return url_host(tmp_path, wait="1s")


def session(host: AskHost, version: str = "2025-11-25", caps: Any = URL) -> Legacy:
    client = Legacy(
        falcon.testing.TestClient(host.app),
        extra={"Authorization": f"Bearer {host.tokens['alice']}"},
    )
    client.initialize(version, caps)
    return client


def test_the_question_the_complete_notification_then_the_result(tmp_path: Path) -> None:
    # NOTE: the fixture's own 10 s wait, not 1 s: the whole suite on two cores once took longer
    # than 1 s to submit the page, and the call ended with -32042 (tested on its own below).
    host = url_host(tmp_path)
    client = session(host)
    events = client.stream("rotate_key", {"service": "api"})
    question = events.next()
    assert question["method"] == "elicitation/create"
    params = question["params"]
    assert set(params) == {"mode", "message", "url", "elicitationId"}
    assert params["mode"] == "url" and params["elicitationId"].startswith("eli_")
    assert client.answer(question, {"action": "accept"}).status_code == 202
    timer = threading.Timer(0.3, lambda: host.submit(params["url"], {"api_key": SECRET}))
    started = time.monotonic()
    timer.start()
    try:
        complete = events.next()
        assert time.monotonic() - started < 5  # NOTE: at the submit, not at the wait's end (10 s)
        assert complete == {
            "jsonrpc": "2.0",
            "method": "notifications/elicitation/complete",
            "params": {"elicitationId": params["elicitationId"]},
        }
        result = events.next()
    finally:
        timer.join()
    assert result["result"]["structuredContent"]["rotated"] is True
    assert SECRET not in str(result)


def test_not_submitted_in_time_is_32042_and_the_retry_goes_on(host: AskHost) -> None:
    client = session(host)
    events = client.stream("rotate_key", {"service": "api"})
    question = events.next()
    client.answer(question, {"action": "accept"})
    (ended,) = events.rest()
    assert ended["error"]["code"] == -32042, ended
    (required,) = ended["error"]["data"]["elicitations"]
    assert required == question["params"]
    host.submit(required["url"], {"api_key": SECRET})
    again = client.call("rotate_key", {"service": "api"})
    assert again["structuredContent"]["rotated"] is True


def test_decline_on_the_stream_ends_with_the_steps_result(host: AskHost) -> None:
    client = session(host)
    events = client.stream("rotate_key", {"service": "api"})
    client.answer(events.next(), {"action": "decline"})
    (ended,) = events.rest()
    assert ended["result"]["structuredContent"] == {
        "rotated": False,
        "reason": "The user declined.",
    }


@pytest.mark.parametrize(
    ("version", "caps"),
    [
        ("2025-11-25", {"elicitation": {"form": {}}}),
        ("2025-11-25", {}),  # no elicitation at all: still no fallback tool for a URL ask
        ("2025-06-18", URL),  # a revision with no URL mode
        ("2025-03-26", URL),
    ],
)
def test_a_session_without_url_mode_gets_32021_never_the_fallback(
    host: AskHost, version: str, caps: Any
) -> None:
    client = session(host, version, caps)
    response = client.request("tools/call", {"name": "rotate_key", "arguments": {"service": "a"}})
    body = response.json
    assert body["error"]["code"] == -32021, body
    assert body["error"]["data"] == {"requiredCapabilities": {"elicitation": {"url": {}}}}
    assert "Retrying will not help" in body["error"]["message"]
    assert "open a page in the user's browser" in body["error"]["message"]
