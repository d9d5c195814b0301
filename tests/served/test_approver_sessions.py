"""An approver's session is as strong as their token: ``host serve`` (two workers, SQLite),
static tokens, the approve fixture.

Sessions live in the store: a copy of the cookie taken before Sign out is refused afterwards (on
either worker), and ``host sessions revoke`` ends them by hand. Every decision establishes the
person again: a token revoked with ``host token revoke``, or an approver scope taken out of the
tokens file, cannot decide from the inbox, the API or the command line once a second has passed,
and the inbox shows the person signed out. Each test makes its own people, so the module shares
one served host.
"""

from __future__ import annotations

import json
import os
import re
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from host.auth.tokenfile import create_token, revoke_token
from host.cli import main
from support.approvals import SPECS, Site, make_tokens, unique
from support.asks import HttpBrowser
from support.servers import host_serve

pytestmark = pytest.mark.served

#: The tokens file is looked at once a second per worker: "within a second", and some slack.
WITHIN_S = 1.2
#: One approver per test, each holding ops:approve.
PEOPLE = ("erin", "frank", "grace", "heidi")


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Site]:
    folder = tmp_path_factory.mktemp("approver-sessions")
    path, tokens = make_tokens(folder)
    for name in PEOPLE:  # NOTE: before the host starts: a new token counts within a second
        tokens[name] = create_token(path, name, ["ops:approve"])[0]
    with host_serve(
        folder, "host", "--workers", "2", specs=SPECS,
        HOST_AUTH_TOKENS=str(path), OPS_ACTS=str(folder / "acts.jsonl"),
    ) as server:  # fmt: skip
        yield Site([server], {**tokens, "file": str(path)}, folder / "acts.jsonl")


def _pending_request(site: Site) -> dict[str, Any]:
    """A request of alice's left pending (``rollback`` waits one second, then ends pending)."""
    service = unique("svc")
    result = site.call("alice", "rollback", service)
    assert result.get("isError") and "pending" in json.dumps(result), result
    (request,) = site.pending("bob", service)
    return request


def _browser(site: Site, who: str) -> HttpBrowser:
    return HttpBrowser(f"http://127.0.0.1:{site.servers[0].port}").sign_in(site.tokens[who])


def _cookie(browser: HttpBrowser) -> str:
    (value,) = [c.value for c in browser.jar if c.name == "host_session"]
    assert value is not None
    return value


def _with_cookie(site: Site, path: str, cookie: str) -> tuple[int, str]:
    request = urllib.request.Request(
        f"http://127.0.0.1:{site.servers[0].port}{path}",
        headers={"Cookie": f"host_session={cookie}"},
    )
    try:
        with urllib.request.urlopen(request, timeout=30) as reply:
            return reply.status, reply.read().decode()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read().decode()


def _csrf(page: str) -> str:
    match = re.search(r'name="csrf" value="([^"]+)"', page)
    assert match, page
    return match.group(1)


def _status(site: Site, request_id: str) -> str:
    status, body = site.api("alice", "GET", f"/{request_id}")
    assert status == 200, body
    return str(body["status"])


def _host(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    """Run ``host ARGS`` in this process (the real command line, without a second start-up)."""
    capsys.readouterr()
    code = main(list(args))
    out, err = capsys.readouterr()
    return code, out, err


def _store(site: Site) -> tuple[str, str]:
    return "--data-dir", str(site.servers[0].log.parent / "host")


def _take_scopes(site: Site, name: str) -> None:
    """Rewrite the tokens file with ``name``'s scopes taken away, as an operator's edit does."""
    path = Path(site.tokens["file"])
    data = json.loads(path.read_text())
    for entry in data["tokens"]:
        if entry["name"] == name:
            entry["scopes"] = []
    fresh = path.with_name(path.name + ".new")
    fresh.write_text(json.dumps(data))
    os.chmod(fresh, 0o600)
    os.replace(fresh, path)


def test_a_copy_of_the_cookie_taken_before_sign_out_is_refused_after_it(site: Site) -> None:
    who = "erin"
    browser = _browser(site, who)
    copied = _cookie(browser)
    for _ in range(4):  # on either worker
        assert _with_cookie(site, "/approvals", copied)[0] == 200
    _, _, inbox = browser.open("/approvals")
    status, _, page = browser.open("/approvals/sign-out", {"csrf": _csrf(inbox)})
    assert status == 200 and "<h1>Sign in</h1>" in page
    for _ in range(4):
        status, page = _with_cookie(site, "/approvals", copied)
        assert status == 401 and "<h1>Sign in</h1>" in page


def test_host_sessions_lists_and_revokes_by_principal(
    site: Site, capsys: pytest.CaptureFixture[str]
) -> None:
    who = "frank"
    cookie = _cookie(_browser(site, who))
    code, out, err = _host(capsys, "sessions", "list", "--principal", who, "--format", "json",
                           *_store(site))  # fmt: skip
    assert code == 0, err
    (shown,) = json.loads(out)
    assert shown["principal"] == who and shown["method"] == "static"
    assert cookie not in out and site.tokens[who] not in out
    code, _, err = _host(capsys, "sessions", "revoke", "--principal", who, *_store(site))
    assert code == 0 and "Ended 1 session." in err, err
    assert _with_cookie(site, "/approvals", cookie)[0] == 401
    code, _, err = _host(capsys, "sessions", "revoke", shown["session"], *_store(site))
    assert code == 1 and "no session" in err


def test_a_revoked_approver_cannot_decide_from_the_inbox_the_api_or_the_command_line(
    site: Site, capsys: pytest.CaptureFixture[str]
) -> None:
    who = "grace"
    request = _pending_request(site)
    browser = _browser(site, who)
    copied = _cookie(browser)
    status, _, page = browser.open(f"/approvals/requests/{request['id']}")
    assert status == 200 and 'value="approve"' in page
    revoke_token(Path(site.tokens["file"]), who)
    time.sleep(WITHIN_S)  # NOTE: the promise is about time: one try each, once it has passed
    status, _, done = browser.open(
        f"/approvals/requests/{request['id']}", {"csrf": _csrf(page), "verdict": "approve"}
    )
    assert status == 401 and "You were signed out" in done
    assert _with_cookie(site, "/approvals", copied)[0] == 401
    status, body = site.api(who, "POST", f"/{request['id']}/approve", {"reason": "ok"})
    assert status == 401 and body["error"] == "invalid_token", body
    base = f"http://127.0.0.1:{site.servers[0].port}"
    code, _, err = _host(capsys, "approvals", "approve", request["id"], "--url", base,
                         "--token", site.tokens[who])  # fmt: skip
    assert code == 1 and "refused (401)" in err and "revoked" in err
    assert _status(site, request["id"]) == "pending"
    code, out, _ = _host(capsys, "sessions", "list", "--principal", who, "--format", "json",
                         *_store(site))  # fmt: skip
    assert json.loads(out) == []  # the signed-out session is gone from the store


def test_an_approver_whose_scope_is_taken_away_cannot_decide_on_any_route(
    site: Site, capsys: pytest.CaptureFixture[str]
) -> None:
    who = "heidi"
    request = _pending_request(site)
    browser = _browser(site, who)
    status, _, page = browser.open(f"/approvals/requests/{request['id']}")
    assert status == 200
    _take_scopes(site, who)
    time.sleep(WITHIN_S)
    status, _, done = browser.open(
        f"/approvals/requests/{request['id']}", {"csrf": _csrf(page), "verdict": "approve"}
    )
    assert status == 403 and "Not yours" in done
    status, body = site.api(who, "POST", f"/{request['id']}/approve", {"reason": "ok"})
    assert status == 403, body
    base = f"http://127.0.0.1:{site.servers[0].port}"
    code, _, err = _host(capsys, "approvals", "approve", request["id"], "--url", base,
                         "--token", site.tokens[who])  # fmt: skip
    assert code == 1 and "refused (403)" in err
    assert _status(site, request["id"]) == "pending"
