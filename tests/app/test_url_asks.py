"""URL asks in process: the modern round trip, the page, and the attacks on it.

The key-rotation fixture asks for a new API key on the host's page (``mode: url``); the handler
keeps only its SHA-256. Over real processes and real clients, see ``tests/served/test_url_asks*``.
"""

from __future__ import annotations

import base64
import hashlib
import json
import logging
import time
from pathlib import Path

import pytest

from host.auth import Identity
from host.auth.tokenfile import digest
from host.pages.render import CSP
from support.asks import (
    PUBLIC_URL,
    AskHost,
    files_holding,
    page_path,
    url_host,
)
from support.visitor import Visitor, csrf_of

SECRET = "k3y-0f-the-day-7f1c2b9d"


@pytest.fixture
def host(tmp_path: Path) -> AskHost:
    return url_host(tmp_path, wait="1s")


def first_round(host: AskHost, who: str = "alice") -> tuple[dict, str]:
    response = host.mcp(who).send(
        "tools/call", {"name": "rotate_key", "arguments": {"service": "api"}}
    )
    result = response.result
    assert result["resultType"] == "input_required", response.body
    params = result["inputRequests"]["credentials"]["params"]
    return result, params["url"]


def retry(host: AskHost, result: dict, action: str = "accept", who: str = "alice") -> dict:
    params = {
        "name": "rotate_key",
        "arguments": {"service": "api"},
        "inputResponses": {"credentials": {"action": action}},
        "requestState": result["requestState"],
    }
    response = host.mcp(who).send("tools/call", params)
    assert response.result is not None, response.body
    return response.result


def rotated(host: AskHost) -> list[dict]:
    path = host.data_dir / "rotated.jsonl"
    return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []


def test_the_client_gets_only_a_message_and_the_page_url(host: AskHost) -> None:
    result, url = first_round(host)
    params = result["inputRequests"]["credentials"]["params"]
    assert params == {"mode": "url", "message": "Enter the new API key for api.", "url": url}
    ask_id = url.rsplit("/", 1)[-1]
    assert url == f"{PUBLIC_URL}/asks/{ask_id}"
    assert len(base64.urlsafe_b64decode(ask_id[4:] + "==")) * 8 >= 128


def test_the_page_submitted_the_retry_goes_on_and_the_handler_gets_the_value(
    host: AskHost,
) -> None:
    result, url = first_round(host)
    done = host.submit(url, {"api_key": SECRET, "note": "quarterly"})
    assert done.status_code == 200 and "Done: return to your client" in done.text
    finished = retry(host, result)
    assert finished["resultType"] == "complete", finished
    digest = hashlib.sha256(SECRET.encode()).hexdigest()
    assert finished["structuredContent"] == {
        "rotated": True,
        "service": "api",
        "sha256": digest[:12],
    }
    assert rotated(host) == [{"service": "api", "sha256": digest, "note": "quarterly"}]
    assert SECRET not in json.dumps(finished)


def test_a_retry_before_the_page_waits_then_asks_again_with_the_same_url(host: AskHost) -> None:
    result, url = first_round(host)
    started = time.monotonic()
    again = retry(host, result)
    assert time.monotonic() - started >= 0.95  # wait: 1s
    assert again["resultType"] == "input_required"
    assert again["inputRequests"]["credentials"]["params"]["url"] == url
    host.submit(url, {"api_key": SECRET})
    assert retry(host, again)["structuredContent"]["rotated"] is True


def test_a_retry_that_waits_goes_on_as_soon_as_the_page_is_submitted(tmp_path: Path) -> None:
    import threading

    # NOTE: the fixture's own 10 s wait, not 1 s: a page submitted 0.5 s in must not race the
    # wait's end on a loaded machine (the whole suite on two cores).
    host = url_host(tmp_path)
    result, url = first_round(host)
    timer = threading.Timer(0.5, lambda: host.submit(url, {"api_key": SECRET}))
    started = time.monotonic()
    timer.start()
    try:
        finished = retry(host, result)
    finally:
        timer.join()
    assert finished["structuredContent"]["rotated"] is True
    assert time.monotonic() - started < 5  # NOTE: at the submit, not at the wait's end (10 s)


@pytest.mark.parametrize(
    ("action", "reason"), [("decline", "The user declined."), ("cancel", "The user dismissed it.")]
)
def test_decline_and_cancel_end_with_the_steps_results(
    host: AskHost, action: str, reason: str
) -> None:
    result, _ = first_round(host)
    ended = retry(host, result, action)
    assert ended["structuredContent"] == {"rotated": False, "reason": reason}
    assert rotated(host) == []


def test_a_client_without_url_mode_gets_32021(host: AskHost) -> None:
    for caps in ({"elicitation": {"form": {}}}, {"elicitation": {}}, {}):
        response = host.mcp(capabilities=caps).send(
            "tools/call", {"name": "rotate_key", "arguments": {"service": "api"}}
        )
        assert response.error is not None and response.error.code == -32021, response.body
        assert response.error.data == {"requiredCapabilities": {"elicitation": {"url": {}}}}


def test_the_page_is_the_callers_only_with_a_password_field_and_strict_headers(
    host: AskHost,
) -> None:
    _, url = first_round(host)
    alice = host.browser("alice")
    moved = alice.get(page_path(url))
    assert moved.status_code == 303 and moved.headers["Cache-Control"] == "no-store"
    path = moved.headers["Location"].replace(PUBLIC_URL, "")
    page = alice.get(path)
    assert page.status_code == 200
    assert 'type="password"' in page.text and 'name="api_key"' in page.text
    assert "Enter the new API key for api." in page.text
    assert page.headers["Content-Security-Policy"] == CSP
    assert page.headers["Cache-Control"] == "no-store"
    assert "<script" not in page.text
    # NOTE: the page is a question for its caller, not the approvals inbox it once claimed to be.
    assert '<span class="brand">A question for you</span>' in page.text
    assert ">Approvals</a>" not in page.text
    for who in ("bob",):  # bob holds ops:approve: an approver is still not the caller
        other = host.browser(who).get(path)
        assert other.status_code == 403 and "Not yours to answer" in other.text
        refused = host.browser(who).post(path, {"csrf": csrf_of(page), "api_key": SECRET})
        assert refused.status_code == 403
    assert host.browser("alice").get(path).status_code == 200  # still open: nothing was taken


def test_signed_in_with_an_issuer_as_alice_the_static_alices_page_is_not_hers(
    host: AskHost,
) -> None:
    # NOTE: the attacker's issuer account has sub alice; the call was the static token alice's.
    _, url = first_round(host)
    moved = host.browser("alice").get(page_path(url))
    path = moved.headers["Location"].replace(PUBLIC_URL, "")
    impostor = host.browser_as(
        Identity("alice", frozenset({"ops:approve"}), method="jwt", proof="a.jwt.token")
    )
    page = impostor.get(path)
    # NOTE: each page establishes the person again: this host has no issuer, so the JWT
    # session is signed out before the page's owner is even compared.
    assert page.status_code == 401 and "You were signed out" in page.text
    same = host.browser_as(
        Identity("alice", method="static", proof=digest(host.tokens["alice"]).hex())
    )
    assert same.get(path).status_code == 200  # the same source and name: her own session
    assert Visitor(host.app).get(path).status_code == 401  # no session: it asks to sign in


def test_without_a_session_the_page_asks_to_sign_in_and_comes_back(host: AskHost) -> None:
    _, url = first_round(host)
    visitor = Visitor(host.app)
    path = visitor.get(page_path(url)).headers["Location"].replace(PUBLIC_URL, "")
    page = visitor.get(path)
    assert page.status_code == 401 and "<h1>Sign in</h1>" in page.text
    done = visitor.post(
        "/approvals/sign-in", {"token": host.tokens["alice"], "csrf": csrf_of(page)}
    )
    assert done.headers["Location"].endswith(path)


def test_an_unknown_a_guessed_and_a_replayed_id_get_one_and_the_same_page(
    host: AskHost,
) -> None:
    result, url = first_round(host)
    host.submit(url, {"api_key": SECRET})
    path = "/approvals/asks/" + url.rsplit("/", 1)[-1]
    alice = host.browser("alice")
    replayed = alice.get(path)
    guessed = alice.get("/approvals/asks/ask_" + "A" * 32)
    odd = alice.get("/approvals/asks/nothing")
    assert replayed.status_code == guessed.status_code == odd.status_code == 404
    assert replayed.text == guessed.text == odd.text
    assert "This question is not open" in replayed.text and "Traceback" not in replayed.text
    again = alice.post(path, {"csrf": csrf_of(alice.get("/approvals")), "api_key": "x" * 9})
    assert again.status_code == 404
    retry(host, result)
    assert alice.get(path).text == guessed.text  # after the call, the ask is gone


def test_a_post_without_or_with_a_foreign_csrf_token_is_refused(host: AskHost) -> None:
    result, url = first_round(host)
    path = "/approvals/asks/" + url.rsplit("/", 1)[-1]
    alice = host.browser("alice")
    assert alice.post(path, {"api_key": SECRET}).status_code == 403
    foreign = csrf_of(host.browser("alice").get(path))  # another session's token
    assert alice.post(path, {"api_key": SECRET, "csrf": foreign}).status_code == 403
    again = retry(host, result)
    assert again["resultType"] == "input_required"  # nothing was submitted


def test_a_value_that_does_not_fit_is_refused_without_showing_it(host: AskHost) -> None:
    _, url = first_round(host)
    short = "abc12"
    page = host.submit(url, {"api_key": short})
    assert page.status_code == 400 and "Please fix" in page.text
    assert short not in page.text


def test_the_secret_is_found_nowhere_after_the_call(
    host: AskHost, caplog: pytest.LogCaptureFixture
) -> None:
    from host.logs import JsonFormatter

    caplog.set_level(logging.DEBUG)
    result, url = first_round(host)
    host.submit(url, {"api_key": SECRET})
    retry(host, result)
    formatter = JsonFormatter()
    lines = [formatter.format(record) for record in caplog.records]
    assert lines and not [line for line in lines if SECRET in line]
    assert list(files_holding(host.data_dir, SECRET)) == []
    assert (
        SECRET not in base64.urlsafe_b64decode(result["requestState"].split(".")[0] + "==").decode()
    )


def test_the_app_refuses_url_asks_without_auth(tmp_path: Path) -> None:
    from host.errors import SettingsError
    from host.settings import Settings
    from host.web.app import create_app
    from support.asks import ASK_SPECS

    settings = Settings(specs_dir=ASK_SPECS, secrets=("k" * 32,), data_dir=tmp_path)
    with pytest.raises(SettingsError, match=r"URL asks \(rotate_key, rotate_prod_key\)"):
        create_app(settings=settings)


def test_a_call_waiting_for_approval_keeps_its_page_and_goes_on_once_approved(
    host: AskHost,
) -> None:
    mcp = host.mcp()
    call = {"name": "rotate_prod_key", "arguments": {"service": "db"}}
    first = mcp.send("tools/call", call).result
    url = first["inputRequests"]["credentials"]["params"]["url"]
    host.submit(url, {"api_key": SECRET})
    responses = {"credentials": {"action": "accept"}}
    retried = {**call, "inputResponses": responses, "requestState": first["requestState"]}
    pending = mcp.send("tools/call", retried).result
    assert pending["isError"] and "Approval is pending" in pending["content"][0]["text"]
    request = pending["_meta"]["host/approval"]["request"]
    bob = host.browser("bob")
    path = f"/approvals/requests/{request}"
    decided = bob.post(path, {"csrf": csrf_of(bob.get(path)), "verdict": "approve", "reason": ""})
    assert decided.status_code == 303, decided.text
    again = mcp.send("tools/call", call).result  # called again: no question, the page was kept
    assert again["resultType"] == "complete", again
    digest = hashlib.sha256(SECRET.encode()).hexdigest()
    assert again["structuredContent"] == {"rotated": True, "service": "db", "sha256": digest[:12]}
    assert list(files_holding(host.data_dir, SECRET)) == []
    assert host.browser("alice").get("/approvals/asks/" + url.rsplit("/", 1)[-1]).status_code == 404
