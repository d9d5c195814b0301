"""The host's pages in process: sign-in, sessions, CSRF, the inbox and its decisions, headers.

A Falcon test client plays the browser (its cookies kept by :class:`Visitor`); the inbox is a
:class:`MemoryApprovals`. The same flows in a real Chromium are in ``test_pages_browser.py``.
"""

from __future__ import annotations

import urllib.parse
import urllib.request
from pathlib import Path
from typing import Any

import falcon.testing
import pytest

from host.auth import AuthSettings
from host.auth.browser_settings import BrowserSettings
from host.auth.errors import AuthSettingsError
from host.auth.tokenfile import create_token
from host.pages.render import CSP, age
from host.web.app import create_app
from support.helpdesk import settings_for
from support.inbox_memory import MemoryApprovals, sample_requests
from support.oauth import AUDIENCE, MockAuthServer
from support.servers import host_serve
from support.visitor import Visitor, csrf_of

pytestmark = pytest.mark.served


@pytest.fixture
def tokens(tmp_path: Path) -> dict[str, str]:
    path = tmp_path / "tokens"
    made = {
        name: create_token(path, name, scopes)[0]
        for name, scopes in [("alice", ["ops:approve"]), ("carol", ["ops"]), ("dave", [])]
    }
    return {**made, "file": str(path)}


@pytest.fixture
def inbox() -> MemoryApprovals:
    return MemoryApprovals(sample_requests())


@pytest.fixture
def app(tmp_path: Path, tokens: dict[str, str], inbox: MemoryApprovals) -> Any:
    settings = settings_for(tmp_path, auth=AuthSettings(tokens_file=Path(tokens["file"])))
    return create_app(settings=settings, approvals=inbox)


def signed_in(app: Any, token: str) -> Visitor:
    visitor = Visitor(app)
    form = visitor.get("/approvals/sign-in")
    done = visitor.post("/approvals/sign-in", {"token": token, "csrf": csrf_of(form)})
    assert done.status_code == 303, done.text
    assert done.headers["Location"].endswith("/approvals")
    return visitor


def test_without_auth_settings_there_are_no_pages(tmp_path: Path) -> None:
    client = falcon.testing.TestClient(create_app(settings=settings_for(tmp_path)))
    for path in ("/approvals", "/approvals/sign-in", "/approvals/static/pages.css"):
        assert client.simulate_get(path).status_code == 404


def test_every_page_carries_the_security_headers(app: Any, tokens: dict[str, str]) -> None:
    visitor = signed_in(app, tokens["alice"])
    for path in (
        "/approvals",
        "/approvals/history",
        "/approvals/requests/req-restart",
        "/approvals/requests/nope",
        "/approvals/nothing-here",
        "/approvals/sign-in",
    ):
        page = visitor.get(path)
        assert page.headers["Content-Security-Policy"] == CSP, path
        assert "default-src 'none'" in CSP and "frame-ancestors 'none'" in CSP
        assert page.headers["X-Frame-Options"] == "DENY"
        assert page.headers["Referrer-Policy"] == "no-referrer"
        assert page.headers["Cache-Control"] == "no-store"
        if page.status_code != 303:  # signed in, the sign-in page leads to the inbox
            assert page.headers["Content-Type"].startswith("text/html")
    css = visitor.get("/approvals/static/pages.css")
    assert css.status_code == 200 and css.headers["Content-Type"].startswith("text/css")


def test_a_page_without_a_session_is_the_sign_in_page_with_401(app: Any) -> None:
    page = Visitor(app).get("/approvals")
    assert page.status_code == 401
    assert "<h1>Sign in</h1>" in page.text and 'name="token"' in page.text
    assert "/approvals/sign-in/start" not in page.text  # no issuer client configured


def test_the_token_form_signs_in_and_the_cookie_is_locked_down(
    app: Any, tokens: dict[str, str]
) -> None:
    visitor = Visitor(app)
    form = visitor.get("/approvals/sign-in")
    done = visitor.client.simulate_post(
        "/approvals/sign-in", cookies=visitor.jar,
        body=urllib.parse.urlencode({"token": tokens["alice"], "csrf": csrf_of(form)}),
        headers={"Content-Type": "application/x-www-form-urlencoded"},
    )  # fmt: skip
    cookie = done.cookies["host_session"]
    assert cookie.http_only and cookie.same_site == "Lax" and cookie.max_age == 8 * 3600
    assert cookie.path == "/approvals"
    assert cookie.secure  # the test client's host is not loopback
    assert tokens["alice"] not in cookie.value  # the session holds no token
    local = visitor.client.simulate_get("/approvals/sign-in", host="127.0.0.1")
    assert not local.cookies["host_signin"].secure  # plain http on loopback only


def test_a_bad_token_is_refused_on_the_page(app: Any, tokens: dict[str, str]) -> None:
    visitor = Visitor(app)
    form = visitor.get("/approvals/sign-in")
    refused = visitor.post("/approvals/sign-in", {"token": "host_nope", "csrf": csrf_of(form)})
    assert refused.status_code == 401 and "not valid" in refused.text
    assert "host_session" not in visitor.jar


def test_the_inbox_lists_what_this_person_may_decide(app: Any, tokens: dict[str, str]) -> None:
    page = signed_in(app, tokens["alice"]).get("/approvals")
    assert page.status_code == 200
    assert "Restart a service" in page.text and "Roll back a deploy" in page.text
    assert "carol asks to restart billing in production." in page.text
    assert "left" in page.text and "ago" in page.text
    # carol made them: nothing for her to decide; dave holds no approver scope.
    assert "Restart a service" not in signed_in(app, tokens["carol"]).get("/approvals").text
    assert "Nothing waits" in signed_in(app, tokens["dave"]).get("/approvals").text


def test_a_request_shows_redacted_fields_as_redacted(app: Any, tokens: dict[str, str]) -> None:
    page = signed_in(app, tokens["alice"]).get("/approvals/requests/req-restart")
    assert page.status_code == 200
    assert "billing" in page.text and "production" in page.text
    assert page.text.count("[redacted]") == 2
    assert 'value="approve"' in page.text and 'value="reject"' in page.text


def test_approve_then_the_request_is_approved_and_in_the_history(
    app: Any, tokens: dict[str, str], inbox: MemoryApprovals
) -> None:
    visitor = signed_in(app, tokens["alice"])
    page = visitor.get("/approvals/requests/req-restart")
    done = visitor.post(
        "/approvals/requests/req-restart",
        {"verdict": "approve", "reason": "", "csrf": csrf_of(page)},
    )
    assert done.status_code == 303
    assert inbox._requests["req-restart"].approved_by == ("alice",)
    assert inbox._requests["req-restart"].status == "approved"
    again = visitor.post(
        "/approvals/requests/req-restart",
        {"verdict": "approve", "reason": "", "csrf": csrf_of(page)},
    )
    assert again.status_code == 409
    assert "approved" in visitor.get("/approvals/history").text


def test_reject_needs_a_reason(app: Any, tokens: dict[str, str], inbox: MemoryApprovals) -> None:
    visitor = signed_in(app, tokens["alice"])
    csrf = csrf_of(visitor.get("/approvals/requests/req-rollback"))
    bare = visitor.post(
        "/approvals/requests/req-rollback", {"verdict": "reject", "reason": " ", "csrf": csrf}
    )
    assert bare.status_code == 400 and "reason is required" in bare.text
    assert inbox._requests["req-rollback"].status == "pending"
    done = visitor.post(
        "/approvals/requests/req-rollback",
        {"verdict": "reject", "reason": "not during the sale", "csrf": csrf},
    )
    assert done.status_code == 303
    assert inbox._requests["req-rollback"].decisions[0].reason == "not during the sale"


def test_the_caller_cannot_decide_their_own_request(app: Any, tokens: dict[str, str]) -> None:
    visitor = signed_in(app, tokens["carol"])
    page = visitor.get("/approvals/requests/req-restart")
    assert page.status_code == 200 and 'value="approve"' not in page.text
    refused = visitor.post(
        "/approvals/requests/req-restart",
        {"verdict": "approve", "reason": "", "csrf": csrf_of(page)},
    )
    assert refused.status_code == 403 and "Not yours to decide" in refused.text


def test_a_post_without_the_right_csrf_token_is_refused(
    app: Any, tokens: dict[str, str], inbox: MemoryApprovals
) -> None:
    visitor = signed_in(app, tokens["alice"])
    other = signed_in(app, tokens["dave"])
    foreign = csrf_of(other.get("/approvals"))
    for form in (
        {"verdict": "approve"},
        {"verdict": "approve", "csrf": "x"},
        {"verdict": "approve", "csrf": foreign},
    ):
        refused = visitor.post("/approvals/requests/req-restart", form)
        assert refused.status_code == 403 and "Form refused" in refused.text
    assert inbox._requests["req-restart"].status == "pending"
    assert visitor.post("/approvals/sign-out", {}).status_code == 403


def test_unknown_and_forbidden_requests_are_pages(app: Any, tokens: dict[str, str]) -> None:
    missing = signed_in(app, tokens["alice"]).get("/approvals/requests/nope")
    assert missing.status_code == 404 and "<h1>Not found</h1>" in missing.text
    forbidden = signed_in(app, tokens["dave"]).get("/approvals/requests/req-restart")
    assert forbidden.status_code == 403 and "Traceback" not in forbidden.text


def test_a_failing_service_is_a_500_page(
    tmp_path: Path, tokens: dict[str, str], caplog: pytest.LogCaptureFixture
) -> None:
    class Broken(MemoryApprovals):
        def decidable(self, who: Any) -> Any:
            raise RuntimeError("the store is down")

    settings = settings_for(tmp_path, auth=AuthSettings(tokens_file=Path(tokens["file"])))
    app = create_app(settings=settings, approvals=Broken(sample_requests()))
    page = signed_in(app, tokens["alice"]).get("/approvals")
    assert page.status_code == 500 and "Something went wrong" in page.text
    assert "Traceback" not in page.text and "store is down" not in page.text
    assert page.headers["Content-Security-Policy"] == CSP
    assert any(r.message == "page failed" for r in caplog.records)


def test_text_from_requests_is_escaped(tmp_path: Path, tokens: dict[str, str]) -> None:
    seed = sample_requests()
    seed[0]["message"] = "<script>alert(1)</script>"
    seed[0]["arguments"] = {"note": "<img src=x onerror=alert(1)>"}
    settings = settings_for(tmp_path, auth=AuthSettings(tokens_file=Path(tokens["file"])))
    app = create_app(settings=settings, approvals=MemoryApprovals(seed))
    visitor = signed_in(app, tokens["alice"])
    for path in ("/approvals", "/approvals/requests/req-restart"):
        text = visitor.get(path).text
        assert "<script>alert" not in text and "<img src=x" not in text
        assert "&lt;script&gt;" in text or "&lt;img" in text


def test_sign_out_ends_the_session(app: Any, tokens: dict[str, str]) -> None:
    visitor = signed_in(app, tokens["alice"])
    csrf = csrf_of(visitor.get("/approvals"))
    out = visitor.post("/approvals/sign-out", {"csrf": csrf})
    assert out.status_code == 303 and "host_session" not in visitor.jar
    assert visitor.get("/approvals").status_code == 401


def test_a_page_asked_before_sign_in_is_where_sign_in_leads(
    app: Any, tokens: dict[str, str]
) -> None:
    visitor = Visitor(app)
    page = visitor.get("/approvals/requests/req-restart")
    assert page.status_code == 401
    done = visitor.post("/approvals/sign-in", {"token": tokens["alice"], "csrf": csrf_of(page)})
    assert done.headers["Location"].endswith("/approvals/requests/req-restart")


def test_a_forged_session_cookie_is_no_session(app: Any) -> None:
    visitor = Visitor(app)
    visitor.jar["host_session"] = "eyJwIjoiYWxpY2UifQ.forged.sig"
    assert visitor.get("/approvals").status_code == 401


def test_browser_settings_are_checked() -> None:
    assert BrowserSettings.from_env({}) == BrowserSettings()
    with pytest.raises(AuthSettingsError, match="go together"):
        BrowserSettings.from_env({"HOST_AUTH_CLIENT_ID": "x"})
    with pytest.raises(AuthSettingsError, match="HOST_AUTH_ISSUER"):
        BrowserSettings.from_env({"HOST_AUTH_CLIENT_ID": "x", "HOST_AUTH_CLIENT_SECRET": "y"})
    with pytest.raises(AuthSettingsError, match="https"):
        BrowserSettings.from_env({"HOST_PUBLIC_URL": "http://tools.example.com"})
    public = BrowserSettings.from_env({"HOST_PUBLIC_URL": "https://tools.example.com/"})
    assert public.public_url == "https://tools.example.com"
    assert public.secure_cookies("http://127.0.0.1:8000")
    assert not BrowserSettings().secure_cookies("http://127.0.0.1:8000")
    assert age(45) == "45 s" and age(3700) == "1 h 1 min" and age(90000) == "1 d 1 h"


def oidc_app(tmp_path: Path, oauth_server: MockAuthServer, inbox: MemoryApprovals) -> Any:
    browser = BrowserSettings("host-pages", "pages-secret", None)
    auth = AuthSettings(issuer=oauth_server.issuer, audience=AUDIENCE, browser=browser)
    return create_app(settings=settings_for(tmp_path, auth=auth), approvals=inbox)


def test_the_issuer_sign_in_is_the_code_flow_with_pkce(
    tmp_path: Path, oauth_server: MockAuthServer, inbox: MemoryApprovals
) -> None:
    visitor = Visitor(oidc_app(tmp_path, oauth_server, inbox))
    page = visitor.get("/approvals")
    assert page.status_code == 401 and "/approvals/sign-in/start" in page.text
    start = visitor.get("/approvals/sign-in/start")
    assert start.status_code == 303
    where = urllib.parse.urlsplit(start.headers["Location"])
    query = urllib.parse.parse_qs(where.query)
    assert f"{where.scheme}://{where.netloc}" == oauth_server.issuer
    assert query["response_type"] == ["code"] and query["code_challenge_method"] == ["S256"]
    assert query["client_id"] == ["host-pages"] and "openid" in query["scope"][0]
    assert query["state"][0] and query["nonce"][0] and query["code_challenge"][0]
    assert query["redirect_uri"] == ["http://falconframework.org/approvals/sign-in/callback"]
    oauth_server.login("alice", ["ops:approve"])
    back = _authorize(start.headers["Location"])
    callback = visitor.get("/approvals/sign-in/callback", **back)
    assert callback.status_code == 303, callback.text
    inbox_page = visitor.get("/approvals")
    assert inbox_page.status_code == 200 and "Restart a service" in inbox_page.text
    assert ">alice<" in inbox_page.text


def test_a_callback_with_another_state_is_refused(
    tmp_path: Path, oauth_server: MockAuthServer, inbox: MemoryApprovals
) -> None:
    visitor = Visitor(oidc_app(tmp_path, oauth_server, inbox))
    start = visitor.get("/approvals/sign-in/start")
    back = _authorize(start.headers["Location"])
    forged = visitor.get("/approvals/sign-in/callback", code=back["code"], state="forged")
    assert forged.status_code == 401 and "host_session" not in visitor.jar
    stranger = Visitor(visitor.client.app)
    assert stranger.get("/approvals/sign-in/callback", **back).status_code == 401


def _authorize(url: str) -> dict[str, str]:
    """The issuer's redirect back (code and state), without following it."""

    class Stop(urllib.request.HTTPRedirectHandler):
        def redirect_request(self, *args: Any, **kwargs: Any) -> None:
            return None

    opener = urllib.request.build_opener(Stop())
    try:
        opener.open(url, timeout=10)
    except urllib.error.HTTPError as exc:
        location = exc.headers["Location"]
    else:
        raise AssertionError("the issuer did not redirect")
    query = urllib.parse.parse_qs(urllib.parse.urlsplit(location).query)
    return {name: values[0] for name, values in query.items()}


def test_host_serve_serves_the_pages_only_with_auth(tmp_path: Path, tokens: dict[str, str]) -> None:
    def get(url: str) -> tuple[int, str]:
        try:
            with urllib.request.urlopen(url, timeout=10) as response:
                return response.status, response.read().decode()
        except urllib.error.HTTPError as exc:
            return exc.code, exc.read().decode()

    with host_serve(tmp_path, "open") as server:
        assert get(server.url + "/approvals")[0] == 404
    with host_serve(tmp_path, "locked", HOST_AUTH_TOKENS=tokens["file"]) as server:
        status, text = get(server.url + "/approvals")
        assert status == 401 and "<h1>Sign in</h1>" in text
        assert get(server.url + "/approvals/static/pages.css")[0] == 200
