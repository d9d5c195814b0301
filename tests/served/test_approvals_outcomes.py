"""What an approver reads of a request over real HTTP: the caller's questions as the caller saw
them (not debug output), and, once decided, what became of the call: on the request's page, in
the API's ``outcome`` and in History.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest

from support.approvals import SPECS, Site, make_tokens, unique
from support.inbox_http import Browser
from support.servers import host_serve

pytestmark = pytest.mark.served


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Site]:
    folder = tmp_path_factory.mktemp("approvals-outcomes")
    path, tokens = make_tokens(folder)
    with host_serve(
        folder, "host", "--workers", "2", specs=SPECS,
        HOST_AUTH_TOKENS=str(path), OPS_ACTS=str(folder / "acts.jsonl"),
    ) as server:  # fmt: skip
        yield Site([server], tokens, folder / "acts.jsonl")


def _outcome(site: Site, request: str, wanted: str) -> dict[str, Any]:
    deadline = time.monotonic() + 10
    body: dict[str, Any] = {}
    while time.monotonic() < deadline:
        status, body = site.api("bob", "GET", f"/{request}")
        if status == 200 and body["outcome"] == wanted:
            return body
        time.sleep(0.05)
    raise AssertionError(body)


def test_the_approver_reads_the_question_and_then_the_outcome(site: Site) -> None:
    service = unique("web")
    results: list[dict[str, Any]] = []
    held = threading.Thread(
        target=lambda: results.append(site.call("alice", "restart_service", service))
    )
    held.start()
    request = site.wait_pending("bob", service)
    assert request["outcome"] is None
    (question,) = request["questions"]
    assert question["message"] == f"restart_service {service}?"
    assert question["kind"] == "confirm" and question["action"] == "accept"
    assert [(f["label"], f["value"]) for f in question["fields"]] == [("Tick to confirm", True)]
    inbox = Browser(site.servers[0], site.tokens["bob"])
    status, _, page = inbox.request("GET", f"/approvals/requests/{request['id']}")
    assert status == 200
    assert f'<p class="asked">restart_service {service}?</p>' in page
    assert '<span class="verdict">Yes</span>' in page
    assert "confirm: true" not in page and '{"confirm"' not in page  # no debug output
    status, _ = site.api("bob", "POST", f"/{request['id']}/approve", {"reason": "ok"})
    assert status == 200
    held.join(30)
    assert results and not results[0].get("isError"), results
    assert _outcome(site, request["id"], "acted")["status"] == "approved"
    status, _, page = inbox.request("GET", f"/approvals/requests/{request['id']}")
    assert "<strong>Acted.</strong> Done: the action ran." in page
    status, _, history = inbox.request("GET", "/approvals/history")
    assert status == 200
    mine = history[history.index(f"/approvals/requests/{request['id']}") :]
    assert "<strong>Acted.</strong>" in mine[: mine.index("</li>")]


def test_a_rejected_and_a_not_yet_finished_request_say_so(site: Site) -> None:
    rejected = site.call("alice", "rollback", unique("db"))["_meta"]["host/approval"]["request"]
    site.api("bob", "POST", f"/{rejected}/reject", {"reason": "not now"})
    assert _outcome(site, rejected, "rejected")["status"] == "rejected"
    waiting = site.call("alice", "rollback", unique("db"))["_meta"]["host/approval"]["request"]
    status, body = site.api("bob", "POST", f"/{waiting}/approve", {"reason": "go"})
    assert status == 200 and body["outcome"] == "running"  # approved, its call not back yet
