"""The host's pages in a real Chromium, served by gunicorn: sign-in both ways, deciding, phones.

The host is ``tests/support/pages_app.py`` under gunicorn (one worker: its inbox is a
:class:`MemoryApprovals` in memory), with static tokens and the mock issuer's OpenID Connect
client both configured. Its screenshots stay in the test's tmp folder: the manual's come from the
real inbox (test_inbox_e2e.py).
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import Browser, Page, expect

from host.auth.tokenfile import create_token
from support.browser import chromium, new_context, playwright
from support.inbox_memory import sample_requests
from support.oauth import AUDIENCE, MockAuthServer
from support.paths import ROOT
from support.servers import clean_env, free_port, stop

__all__ = ["chromium", "playwright"]  # the fixtures, used by name

pytestmark = [pytest.mark.browser, pytest.mark.served]


class Served:
    """The served host: its URL and the tokens of its people."""

    def __init__(self, url: str, tokens: dict[str, str]) -> None:
        self.url = url
        self.tokens = tokens


def _seed() -> list[dict[str, Any]]:
    restart, rollback = sample_requests()
    now = time.time()
    others = [
        ("approve", "scale_service", "Scale a service", "bob asks to scale search to 6 replicas."),
        ("reject", "drop_cache", "Drop a cache", "bob asks to drop the sessions cache in eu-1."),
        ("csrf", "rotate_key", "Rotate a key", "dana asks to rotate the payments signing key."),
    ]
    made = [
        dict(restart, id=f"req-{name}", tool=tool, title=title, message=message,
             caller=message.split()[0], created=now - 600 * (i + 2))
        for i, (name, tool, title, message) in enumerate(others)
    ]  # fmt: skip
    return [restart, rollback, *made]


@pytest.fixture(scope="module")
def served(
    tmp_path_factory: pytest.TempPathFactory, oauth_server: MockAuthServer
) -> Iterator[Served]:
    tmp = tmp_path_factory.mktemp("pages")
    tokens_file = tmp / "tokens"
    tokens = {
        name: create_token(tokens_file, name, scopes)[0]
        for name, scopes in [("alice", ["ops:approve"]), ("bob", ["ops"])]
    }
    (tmp / "inbox.json").write_text(json.dumps(_seed()))
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    env = clean_env(
        HOST_SPECS=str(ROOT / "specs"), HOST_DATA_DIR=str(tmp / "data"),
        HELPDESK_DB=str(tmp / "helpdesk.db"), HOST_TEST_INBOX=str(tmp / "inbox.json"),
        HOST_AUTH_TOKENS=str(tokens_file), HOST_PUBLIC_URL=url,
        HOST_AUTH_CLIENT_ID="host-pages", HOST_AUTH_CLIENT_SECRET="pages-secret",
        **oauth_server.env(AUDIENCE),
    )  # fmt: skip
    argv = [
        sys.executable,
        "-m",
        "gunicorn",
        "support.pages_app:app",
        "--pythonpath",
        str(ROOT / "tests"),
    ]
    log = tmp / "gunicorn.log"
    with log.open("wb") as out:
        proc = subprocess.Popen(
            [*argv, "--bind", f"127.0.0.1:{port}", "--workers", "1", "--threads", "4"],
            env=env, cwd=tmp, stdout=out, stderr=subprocess.STDOUT,
        )  # fmt: skip
    try:
        _ready(url, proc, log)
        yield Served(url, tokens)
    finally:
        stop(proc, 15)


def _ready(url: str, proc: subprocess.Popen[bytes], log: Path) -> None:
    deadline = time.monotonic() + 30
    while True:
        try:
            with urllib.request.urlopen(f"{url}/readyz", timeout=2):
                return
        except OSError:
            pass
        if proc.poll() is not None or time.monotonic() > deadline:
            pytest.fail(f"gunicorn did not start:\n{log.read_text()}", pytrace=False)
        time.sleep(0.1)


def sign_in_with_token(page: Page, served: Served, who: str) -> None:
    page.goto(f"{served.url}/approvals")
    expect(page.get_by_role("heading", name="Sign in")).to_be_visible()
    page.get_by_label("Your token").fill(served.tokens[who])
    page.get_by_role("button", name="Sign in with token").click()
    expect(page.get_by_role("heading", name="Waiting for you")).to_be_visible()


def no_horizontal_scroll(page: Page) -> None:
    width = page.evaluate("[document.documentElement.scrollWidth, window.innerWidth]")
    assert width[0] <= width[1], width


def shot(page: Page, tmp_path: Path, name: str) -> None:
    # NOTE: in CSS pixels, so a phone's screenshot is 390 wide whatever its pixel ratio.
    page.screenshot(path=str(tmp_path / name), full_page=True, scale="css")


def test_sign_in_with_the_issuer(
    chromium: Browser, served: Served, oauth_server: MockAuthServer
) -> None:
    # NOTE: not alice: a JWT whose sub names a static token is refused (one name, one person).
    oauth_server.login("erin", ["ops:approve"])
    with new_context(chromium) as context:
        page = context.new_page()
        page.goto(f"{served.url}/approvals")
        page.get_by_role("link", name="Sign in with your organization").click()
        expect(page.get_by_role("heading", name="Waiting for you")).to_be_visible()
        assert page.url == f"{served.url}/approvals"
        expect(page.locator(".who")).to_have_text("erin")
        expect(page.get_by_role("link", name="Restart a service")).to_be_visible()


def test_sign_in_with_a_token_and_see_redacted_fields(
    chromium: Browser, served: Served, tmp_path: Path
) -> None:
    with new_context(chromium) as context:
        page = context.new_page()
        sign_in_with_token(page, served, "alice")
        expect(page.get_by_text("carol asks to restart billing in production.")).to_be_visible()
        shot(page, tmp_path, "inbox-desktop.png")
        page.goto(f"{served.url}/approvals/requests/req-restart")
        expect(page.get_by_role("heading", name="Arguments")).to_be_visible()
        expect(page.locator(".redacted")).to_have_count(2)
        expect(page.locator("dd", has_text="billing")).to_be_visible()
        assert "[redacted]" in page.locator("dl.values").first.inner_text()


def test_approve(chromium: Browser, served: Served) -> None:
    with new_context(chromium) as context:
        page = context.new_page()
        sign_in_with_token(page, served, "alice")
        page.goto(f"{served.url}/approvals/requests/req-approve")
        page.get_by_role("button", name="Approve").click()
        expect(page.locator("h1 .status")).to_have_text("approved")
        expect(page.get_by_text("alice approved at")).to_be_visible()
        page.goto(f"{served.url}/approvals/history")
        expect(page.locator("a[href$='/approvals/requests/req-approve']")).to_be_visible()


def test_reject_with_a_reason(chromium: Browser, served: Served) -> None:
    with new_context(chromium) as context:
        page = context.new_page()
        sign_in_with_token(page, served, "alice")
        page.goto(f"{served.url}/approvals/requests/req-reject")
        page.get_by_role("button", name="Reject").click()
        expect(page.get_by_role("alert")).to_contain_text("a reason is required")
        page.get_by_label("Reason").fill("Not during the sale.")
        page.get_by_role("button", name="Reject").click()
        expect(page.locator("h1 .status")).to_have_text("rejected")
        expect(page.get_by_text("Not during the sale.")).to_be_visible()


def test_a_raw_post_without_the_csrf_token_is_refused(chromium: Browser, served: Served) -> None:
    with new_context(chromium) as context:
        page = context.new_page()
        sign_in_with_token(page, served, "alice")
        target = f"{served.url}/approvals/requests/req-csrf"
        refused = context.request.post(target, form={"verdict": "approve"}, max_redirects=0)
        assert refused.status == 403 and "Form refused" in refused.text()
        page.goto(target)
        expect(page.locator("h1 .status")).to_have_text("pending")


def test_on_a_phone(chromium: Browser, served: Served, tmp_path: Path) -> None:
    with new_context(chromium, phone=True) as context:
        page = context.new_page()
        page.goto(f"{served.url}/approvals")
        no_horizontal_scroll(page)
        sign_in_with_token(page, served, "alice")
        no_horizontal_scroll(page)
        shot(page, tmp_path, "inbox-phone.png")
        page.goto(f"{served.url}/approvals/requests/req-restart")
        no_horizontal_scroll(page)
        for name in ("Approve", "Reject", "Sign out"):
            box = page.get_by_role("button", name=name).bounding_box()
            assert box is not None and box["height"] >= 44, (name, box)
        shot(page, tmp_path, "request-phone.png")


def test_sign_out(chromium: Browser, served: Served) -> None:
    with new_context(chromium) as context:
        page = context.new_page()
        sign_in_with_token(page, served, "bob")
        page.get_by_role("button", name="Sign out").click()
        expect(page.get_by_role("heading", name="Sign in")).to_be_visible()
        assert not [c for c in context.cookies() if c["name"] == "host_session"]
        response = page.goto(f"{served.url}/approvals")
        assert response is not None and response.status == 401
