"""The inbox end to end: ``host serve`` with two workers, a call that waits, a person in Chromium.

``alice`` calls the approve fixture's tools with a static token (her ticket is an
``audit.redact`` field); ``bob`` decides in the browser, signed in with the token form; ``erin``
signs in through the mock issuer and calls with its JWT. Every act appends a line to one file,
so acts are counted across both workers. ``HOST_TEST_SCREENSHOTS=1`` writes the manual's
screenshots (docs/images/) from this real inbox.
"""

from __future__ import annotations

import http.client
import os
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import Browser, Page, expect

from support.approvals import SPECS as APPROVE_SPECS
from support.approvals import SURE, Site, make_tokens, round_trip, unique
from support.browser import chromium, new_context, playwright
from support.oauth import AUDIENCE, MockAuthServer
from support.paths import ROOT
from support.servers import host_serve

__all__ = ["chromium", "playwright"]  # the fixtures, used by name

pytestmark = [pytest.mark.browser, pytest.mark.served]

SHOTS = ROOT / "docs" / "images"


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory, oauth_server: MockAuthServer) -> Iterator[Site]:
    folder = tmp_path_factory.mktemp("inbox-e2e")
    path, tokens = make_tokens(folder)
    with host_serve(
        folder, "host", "--workers", "2", specs=APPROVE_SPECS,
        HOST_AUTH_TOKENS=str(path), OPS_ACTS=str(folder / "acts.jsonl"),
        HOST_PUBLIC_URL="http://127.0.0.1:{port}",
        HOST_AUTH_CLIENT_ID="host-pages", HOST_AUTH_CLIENT_SECRET="pages-secret",
        **oauth_server.env(AUDIENCE),
    ) as server:  # fmt: skip
        yield Site([server], tokens, folder / "acts.jsonl")


def call(site: Site, token: str, tool: str, arguments: dict[str, Any]) -> dict[str, Any]:
    """A whole modern call with ``token``, ticking the confirm; its result."""
    conn = http.client.HTTPConnection("127.0.0.1", site.servers[0].port, timeout=60)
    try:
        result = round_trip(conn, token, tool, arguments)
        if result.get("resultType") == "input_required":
            extra = {"inputResponses": SURE, "requestState": result["requestState"]}
            result = round_trip(conn, token, tool, arguments, **extra)
        return result
    finally:
        conn.close()


def held(site: Site, token: str, tool: str, arguments: dict[str, Any]) -> Callable[[], Any]:
    """Start a call that waits for a decision in a thread; a function that joins it."""
    results: list[dict[str, Any]] = []
    thread = threading.Thread(target=lambda: results.append(call(site, token, tool, arguments)))
    thread.start()

    def result() -> dict[str, Any]:
        thread.join(40)
        (done,) = results
        return done

    return result


def sign_in_with_token(page: Page, site: Site, who: str) -> None:
    page.goto(f"{site.servers[0].url}/approvals")
    expect(page.get_by_role("heading", name="Sign in")).to_be_visible()
    page.get_by_label("Your token").fill(site.tokens[who])
    page.get_by_role("button", name="Sign in with token").click()
    expect(page.get_by_role("heading", name="Waiting for you")).to_be_visible()


def open_request(page: Page, site: Site, request_id: str) -> None:
    """Open a request from the inbox's list, as a person would."""
    page.goto(f"{site.servers[0].url}/approvals")
    page.locator(f"a[href$='/approvals/requests/{request_id}']").click()
    expect(page.get_by_role("heading", name="Arguments")).to_be_visible()


def shot(page: Page, tmp_path: Path, name: str) -> None:
    # NOTE: in CSS pixels, so a phone's screenshot is 390 wide whatever its pixel ratio.
    where = SHOTS if os.environ.get("HOST_TEST_SCREENSHOTS") == "1" else tmp_path
    page.screenshot(path=str(where / name), full_page=True, scale="css")


def no_horizontal_scroll(page: Page) -> None:
    width = page.evaluate("[document.documentElement.scrollWidth, window.innerWidth]")
    assert width[0] <= width[1], width


def test_the_inbox_on_a_desktop_and_a_phone(chromium: Browser, site: Site, tmp_path: Path) -> None:
    services = ["billing", "search"]
    for service in services:  # rollback waits a second, then leaves its request pending
        pending = call(site, site.tokens["alice"], "rollback", {"service": service})
        assert pending["_meta"]["host/approval"]["status"] == "pending"
    wait = held(site, site.tokens["alice"], "restart_service",
                {"service": "web", "ticket": "CHG-2041"})  # fmt: skip
    request = site.wait_pending("bob", "web")
    with new_context(chromium) as context:
        page = context.new_page()
        sign_in_with_token(page, site, "bob")
        expect(page.get_by_text("alice asks to restart_service web.")).to_be_visible()
        shot(page, tmp_path, "inbox-desktop.png")
    with new_context(chromium, phone=True) as context:
        page = context.new_page()
        sign_in_with_token(page, site, "bob")
        no_horizontal_scroll(page)
        shot(page, tmp_path, "inbox-phone.png")
        open_request(page, site, request["id"])
        # The question as alice saw it, and her answer in words, not debug output.
        expect(page.locator(".asked")).to_have_text("restart_service web?")
        expect(page.locator(".answer")).to_have_text("Yes")
        no_horizontal_scroll(page)
        shot(page, tmp_path, "request-phone.png")
        page.get_by_role("button", name="Approve").click()
        expect(page.locator("h1 .status")).to_have_text("approved")
        assert wait()["structuredContent"]["restarted"] == "web"
        # Then what became of the call: on the request's page and in History.
        page.reload()
        expect(page.locator(".outcome")).to_contain_text("Acted. Done: the action ran.")
        no_horizontal_scroll(page)
        shot(page, tmp_path, "request-decided-phone.png")
        page.get_by_role("link", name="History").click()
        entry = page.locator("li.card", has=page.locator(f"a[href$='{request['id']}']"))
        expect(entry.locator(".outcome")).to_contain_text("Acted.")
        no_horizontal_scroll(page)
        shot(page, tmp_path, "history-phone.png")
    for service in services:  # the next tests' inboxes start empty
        (left,) = site.pending("bob", service)
        status, _ = site.api("bob", "POST", f"/{left['id']}/reject", {"reason": "done"})
        assert status == 200


def test_approved_in_the_browser_the_held_call_acts_once(
    chromium: Browser, site: Site, tmp_path: Path
) -> None:
    service = unique("web")
    wait = held(site, site.tokens["alice"], "restart_service",
                {"service": service, "ticket": "CHG-1234 secret"})  # fmt: skip
    request = site.wait_pending("bob", service)
    assert request["arguments"]["ticket"] == "[redacted]"
    with new_context(chromium) as context:
        page = context.new_page()
        sign_in_with_token(page, site, "bob")
        expect(page.get_by_text(f"alice asks to restart_service {service}.")).to_be_visible()
        open_request(page, site, request["id"])
        expect(page.locator("dd", has_text=service)).to_be_visible()
        expect(page.locator(".redacted")).to_have_count(1)
        assert "[redacted]" in page.locator("dl.values").first.inner_text()
        assert "CHG-1234" not in page.content()
        page.get_by_role("button", name="Approve").click()
        expect(page.locator("h1 .status")).to_have_text("approved")
        expect(page.get_by_text("bob approved at")).to_be_visible()
        expect(page.get_by_role("button", name="Approve")).to_have_count(0)
    result = wait()
    assert not result.get("isError"), result
    assert result["structuredContent"] == {"restarted": service, "approved_by": ["bob"]}
    (act,) = site.acted(service)
    assert act["principal"] == "alice" and act["request"] == request["id"]


def test_rejected_in_the_browser_the_held_call_ends_without_acting(
    chromium: Browser, site: Site
) -> None:
    service = unique("db")
    wait = held(site, site.tokens["alice"], "restart_service", {"service": service})
    request = site.wait_pending("carol", service)
    with new_context(chromium) as context:
        page = context.new_page()
        sign_in_with_token(page, site, "carol")
        open_request(page, site, request["id"])
        page.get_by_role("button", name="Reject").click()
        expect(page.get_by_role("alert")).to_contain_text("a reason is required")
        page.get_by_label("Reason").fill("Not during the sale.")
        page.get_by_role("button", name="Reject").click()
        expect(page.locator("h1 .status")).to_have_text("rejected")
        expect(page.get_by_text("Not during the sale.")).to_be_visible()
    assert wait()["structuredContent"] == {"done": False, "reason": "Not during the sale."}
    assert site.acted(service) == []


def test_signed_in_with_the_issuer_the_caller_cannot_approve_her_own(
    chromium: Browser, site: Site, oauth_server: MockAuthServer
) -> None:
    # NOTE: not alice: a JWT whose sub names a static token is refused (one name, one person).
    service = unique("cache")
    jwt = oauth_server.token("erin", ["ops:approve"])
    pending = call(site, jwt, "rollback", {"service": service})["_meta"]["host/approval"]
    oauth_server.login("erin", ["ops:approve"])
    url = site.servers[0].url
    with new_context(chromium) as context:
        page = context.new_page()
        page.goto(f"{url}/approvals")
        page.get_by_role("link", name="Sign in with your organization").click()
        expect(page.get_by_role("heading", name="Waiting for you")).to_be_visible()
        expect(page.locator(".who")).to_have_text("erin")
        mine = f"/approvals/requests/{pending['request']}"
        expect(page.locator(f"a[href$='{mine}']")).to_have_count(0)  # not in her inbox
        page.goto(url + mine)
        expect(page.get_by_text("You asked for this one")).to_be_visible()
        expect(page.get_by_role("button", name="Approve")).to_have_count(0)
        csrf = page.locator("form.signout input[name=csrf]").get_attribute("value")
        assert csrf
        forged = context.request.post(
            url + mine,
            form={"csrf": csrf, "verdict": "approve", "reason": "mine"}, max_redirects=0,
        )  # fmt: skip
        assert forged.status == 403 and "Not yours to decide" in forged.text()
        page.goto(url + "/approvals/sign-out")  # a link signs nobody out: back to the inbox
        expect(page.get_by_role("heading", name="Waiting for you")).to_be_visible()
    status, body = site.api("bob", "GET", f"/{pending['request']}")
    assert status == 200 and body["status"] == "pending" and body["approved_by"] == []
    assert site.acted(service) == []
