"""Bodies of the approvals API and the pages' forms, as an attacker writes them.

The API parsed its bodies with Python's lenient parser: ``NaN`` and a lone surrogate in
``reason`` were taken, and the surrogate failed later, writing the decision (HTTP 500). It reads
I-JSON now, as ``/mcp`` does: 400 naming what and where, and nothing is decided.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import falcon.testing
import pytest

from host.auth import AuthSettings
from host.spec import load_project
from support.approvals import SPECS, SURE, make_tokens
from support.modern import Mcp, app_client
from support.visitor import Visitor, csrf_of

API = "/approvals/api/requests"


@pytest.fixture
def site(tmp_path: Path) -> tuple[falcon.testing.TestClient, dict[str, str]]:
    path, tokens = make_tokens(tmp_path)
    project = load_project(SPECS, SPECS.parent / "handlers")
    return app_client(tmp_path, project, auth=AuthSettings(tokens_file=path)), tokens


def _pending(http: falcon.testing.TestClient, tokens: dict[str, str]) -> str:
    alice = Mcp(http, token=tokens["alice"])
    first = alice.result(alice.call("rollback", {"service": "web"}))
    alice.call("rollback", {"service": "web"}, responses=SURE, state=first["requestState"])
    found = _api(http, tokens["bob"], "GET", "?status=pending")
    (request,) = found.json["requests"]
    return str(request["id"])


def _api(
    http: falcon.testing.TestClient, token: str, method: str, path: str, body: bytes = b""
) -> Any:
    headers = {"Authorization": f"Bearer {token}", "Content-Type": "application/json"}
    return http.simulate_request(method, API + path, headers=headers, body=body)


@pytest.mark.parametrize(
    ("body", "names"),
    [
        (b'{"reason": "\\ud800"}', "/reason"),
        (b'{"reason": "ok", "n": NaN}', "/n"),
        (b'{"reason": "ok", "n": 1e999}', "/n"),
        (b'{"reason": "a", "reason": "b"}', "reason"),
    ],
)
def test_a_body_that_is_not_i_json_gets_400_naming_it_and_decides_nothing(
    site: tuple[falcon.testing.TestClient, dict[str, str]], body: bytes, names: str
) -> None:
    http, tokens = site
    request = _pending(http, tokens)
    refused = _api(http, tokens["bob"], "POST", f"/{request}/approve", body)
    assert refused.status_code == 400, refused.text
    assert refused.json["error"] == "bad_request"
    assert names in json.dumps(refused.json)
    still = _api(http, tokens["bob"], "GET", f"/{request}")
    assert still.json["status"] == "pending" and still.json["decisions"] == []
    done = _api(http, tokens["bob"], "POST", f"/{request}/approve", b'{"reason": "fine"}')
    assert done.status_code == 200 and done.json["status"] == "approved"


@pytest.mark.parametrize(
    ("reason", "status"), [(b"%ED%A0%80", 303), (b"%FF%FE", 303), (b"\xed\xa0\x80", 400)]
)
def test_a_form_field_with_a_surrogates_bytes_never_gets_a_500(
    site: tuple[falcon.testing.TestClient, dict[str, str]], reason: bytes, status: int
) -> None:
    http, tokens = site
    request = _pending(http, tokens)
    bob = Visitor(http.app).sign_in(tokens["bob"])
    page = bob.get(f"/approvals/requests/{request}")
    body = b"csrf=" + csrf_of(page).encode() + b"&verdict=reject&reason=" + reason
    sent = bob.client.simulate_post(
        f"/approvals/requests/{request}", body=body, cookies=bob.jar,
        headers={"Content-Type": "application/x-www-form-urlencoded"},
    )  # fmt: skip
    # NOTE: percent-escapes that are not UTF-8 read as U+FFFD (a reason the store can keep);
    # raw bytes that are not ASCII are not a form at all: 400, and nothing is decided.
    assert sent.status_code == status, sent.text
    still = _api(http, tokens["bob"], "GET", f"/{request}").json
    if status == 400:
        assert "URL-encoded" in sent.text and still["status"] == "pending"
    else:
        assert still["status"] == "rejected" and "\ufffd" in still["decisions"][0]["reason"]
