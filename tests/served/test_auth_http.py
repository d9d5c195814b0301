"""The host as an OAuth 2.1 resource server, end to end through the WSGI app.

Tokens come from a real authorization server (``oauth_server``, see ``tests/support/oauth.py``) or
from ``host token create``'s file; forged ones only where a test needs a bad one. Every refusal is
a 401 with the challenge that points at the protected resource metadata, and says no more than
``invalid_token``; the caller's identity then binds ``requestState`` and legacy sessions.
"""

from __future__ import annotations

import base64
import json
from pathlib import Path
from typing import Any

import falcon.testing
import pytest

from host.auth import AuthSettings
from host.auth.tokenfile import create_token
from host.errors import SettingsError
from host.spec import load_project
from host.spec.model import Project
from support.legacy import Legacy
from support.modern import Mcp, app_client
from support.oauth import AUDIENCE, MockAuthServer
from support.protected import METADATA, SCOPED, WHO, WHOAMI, YES, refused

pytestmark = pytest.mark.served


@pytest.fixture
def project(tmp_path: Path) -> Project:
    (tmp_path / "specs").mkdir()
    (tmp_path / "handlers").mkdir()
    (tmp_path / "specs" / "who.yaml").write_text(WHOAMI)
    (tmp_path / "handlers" / "who.py").write_text(WHO)
    return load_project(tmp_path / "specs", tmp_path / "handlers")


@pytest.fixture
def http(
    tmp_path: Path, project: Project, oauth_server: MockAuthServer
) -> falcon.testing.TestClient:
    settings = AuthSettings(issuer=oauth_server.issuer, audience=AUDIENCE)
    return app_client(tmp_path, project, auth=settings)


def bearer(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


def whoami(mcp: Mcp) -> dict[str, Any]:
    first = mcp.result(mcp.call("whoami"))
    done = mcp.result(mcp.call("whoami", responses=YES, state=first["requestState"]))
    structured: dict[str, Any] = done["structuredContent"]
    return structured


def test_a_token_from_the_issuer_is_the_handlers_caller(
    http: falcon.testing.TestClient, oauth_server: MockAuthServer
) -> None:
    token = oauth_server.token(sub="alice", scopes=["tickets:read", "tickets"])
    assert whoami(Mcp(http, token=token)) == {
        "principal": "alice",
        "scopes": ["tickets", "tickets:read"],
        "sub": "alice",
        "aud": AUDIENCE,
    }


def test_the_protected_resource_metadata_is_served_at_both_paths(
    http: falcon.testing.TestClient, oauth_server: MockAuthServer
) -> None:
    for path in (
        "/.well-known/oauth-protected-resource/mcp",
        "/.well-known/oauth-protected-resource",
    ):
        document = http.simulate_get(path)
        assert document.status_code == 200
        assert document.json == {
            "resource": AUDIENCE,
            "authorization_servers": [oauth_server.issuer],
            "bearer_methods_supported": ["header"],
        }


def test_no_token_gets_the_challenge(http: falcon.testing.TestClient) -> None:
    refused(Mcp(http).call("whoami"), None)
    refused(http.simulate_get("/mcp"), None)
    refused(http.simulate_delete("/mcp", headers={"Mcp-Session-Id": "x"}), None)


def forge(header: dict[str, Any], claims: dict[str, Any], signature: bytes = b"") -> str:
    def part(value: Any) -> str:
        return base64.urlsafe_b64encode(value).rstrip(b"=").decode()

    return ".".join(
        [part(json.dumps(header).encode()), part(json.dumps(claims).encode()), part(signature)]
    )


def b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def claims(token: str) -> dict[str, Any]:
    body = token.split(".")[1]
    loaded: dict[str, Any] = json.loads(base64.urlsafe_b64decode(body + "=" * (-len(body) % 4)))
    return loaded


def test_every_bad_token_is_an_invalid_token_and_nothing_more(
    http: falcon.testing.TestClient,
    oauth_server: MockAuthServer,
    other_oauth_server: MockAuthServer,
) -> None:
    good = oauth_server.token()
    header, body, signature = good.split(".")
    tampered = json.dumps({**claims(good), "sub": "root"}).encode()
    bad = {
        "bad signature": f"{header}.{body}.{signature[:-6]}AAAAAA",
        "altered claims": f"{header}.{b64(tampered)}.{signature}",
        "another key": other_oauth_server.token(audience=AUDIENCE),
        "wrong issuer": oauth_server.token(iss="https://evil.example.com"),
        "wrong audience": oauth_server.token(audience="https://other.example.com/mcp"),
        "expired": oauth_server.token(expires_in=-3600),
        "alg none": forge({"alg": "none", "typ": "JWT"}, claims(good)),
        "garbage": "not-a-token",
    }
    for what, token in bad.items():
        response = Mcp(http, token=token).call("whoami")
        refused(response)
        assert what not in response.text and "signature" not in response.text


def test_a_token_in_the_query_string_is_refused(
    http: falcon.testing.TestClient, oauth_server: MockAuthServer
) -> None:
    token = oauth_server.token()
    mcp = Mcp(http)
    body = {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "whoami"}}
    for name in ("access_token", "token"):
        response = http.simulate_post(
            "/mcp", json=body, params={name: token}, headers=mcp.headers("tools/call", "whoami")
        )
        refused(response)
    # Not even beside a good header: a token in a URL leaks into logs.
    response = http.simulate_post(
        "/mcp",
        json=body,
        params={"access_token": token},
        headers=Mcp(http, token=token).headers("tools/call", "whoami"),
    )
    refused(response)


def test_a_state_minted_for_alice_does_not_open_for_bob(
    http: falcon.testing.TestClient, oauth_server: MockAuthServer
) -> None:
    alice = Mcp(http, token=oauth_server.token(sub="alice"))
    bob = Mcp(http, token=oauth_server.token(sub="bob"))
    state = alice.result(alice.call("whoami"))["requestState"]
    stolen = bob.call("whoami", responses=YES, state=state)
    assert stolen.status_code == 400
    assert stolen.json["error"]["message"] == "Invalid or expired requestState"
    mine = alice.result(alice.call("whoami", responses=YES, state=state))
    assert mine["structuredContent"]["principal"] == "alice"


def test_a_legacy_session_is_alices_alone(
    tmp_path: Path, project: Project, oauth_server: MockAuthServer
) -> None:
    settings = AuthSettings(issuer=oauth_server.issuer, audience=AUDIENCE)
    http = app_client(tmp_path, project, auth=settings)
    alice = Legacy(http, extra=bearer(oauth_server.token(sub="alice")))
    alice.initialize("2025-11-25")
    assert [t["name"] for t in alice.tools()] == ["whoami"]
    bob = Legacy(http, extra=bearer(oauth_server.token(sub="bob")))
    bob.session, bob.version = alice.session, alice.version
    response = bob.request("tools/list")
    assert response.status_code == 404
    assert "Session not found" in response.json["error"]["message"]
    anonymous = Legacy(http)
    anonymous.session, anonymous.version = alice.session, alice.version
    assert anonymous.request("tools/list").status_code == 401


def test_static_tokens_are_a_complete_set_up(tmp_path: Path, project: Project) -> None:
    tokens = tmp_path / "tokens"
    ci, _ = create_token(tokens, "ci", ["deploy"])
    http = app_client(tmp_path, project, auth=AuthSettings(tokens_file=tokens))
    assert whoami(Mcp(http, token=ci)) == {
        "principal": "ci",
        "scopes": ["deploy"],
        "sub": "ci",
        "aud": None,
    }
    response = Mcp(http).call("whoami")
    assert response.status_code == 401
    assert response.headers["www-authenticate"] == "Bearer"
    wrong = Mcp(http, token=ci[:-4] + "AAAA").call("whoami")
    assert wrong.headers["www-authenticate"] == 'Bearer error="invalid_token"'
    # No issuer, no authorization server to advertise: no metadata.
    assert http.simulate_get("/.well-known/oauth-protected-resource").status_code == 404


@pytest.fixture
def scoped(tmp_path: Path) -> Project:
    (tmp_path / "scoped").mkdir()
    (tmp_path / "scoped" / "desk.yaml").write_text(SCOPED)
    (tmp_path / "handlers").mkdir(exist_ok=True)
    (tmp_path / "handlers" / "who.py").write_text(WHO)
    return load_project(tmp_path / "scoped", tmp_path / "handlers")


def forbidden(response: falcon.testing.Result) -> None:
    assert response.status_code == 403, response.text
    assert response.headers["www-authenticate"] == (
        f'Bearer error="insufficient_scope", scope="tickets:read tickets:write", '
        f'resource_metadata="{METADATA}"'
    )
    error = response.json["error"]
    assert error["data"] == {
        "type": "INSUFFICIENT_SCOPE",
        "requiredScopes": ["tickets:read", "tickets:write"],
    }


def test_scopes_are_checked_before_anything_of_the_tool_runs(
    tmp_path: Path, scoped: Project, oauth_server: MockAuthServer
) -> None:
    settings = AuthSettings(issuer=oauth_server.issuer, audience=AUDIENCE)
    http = app_client(tmp_path, scoped, auth=settings)
    reader = Mcp(http, token=oauth_server.token(sub="ann", scopes=["tickets:read"]))
    assert reader.result(reader.call("peek"))["structuredContent"]["principal"] == "ann"
    forbidden(reader.call("wipe"))
    tools = reader.result(reader.request("tools/list"))["tools"]
    assert [t["name"] for t in tools] == ["peek", "wipe"]  # every tool is listed
    nobody = Mcp(http, token=oauth_server.token(sub="bob"))
    response = nobody.call("peek")
    assert response.status_code == 403
    assert 'scope="tickets:read"' in response.headers["www-authenticate"]
    owner = Mcp(http, token=oauth_server.token(sub="cy", scopes=["tickets"]))
    assert whoami_of(owner, "wipe")["scopes"] == ["tickets"]  # `tickets` holds both
    # Without a token at all, the challenge says which scopes every call needs.
    challenge = Mcp(http).call("peek").headers["www-authenticate"]
    assert challenge == f'Bearer scope="tickets:read tickets:write", resource_metadata="{METADATA}"'


def test_a_legacy_session_gets_the_same_403(
    tmp_path: Path, scoped: Project, oauth_server: MockAuthServer
) -> None:
    http = app_client(
        tmp_path, scoped, auth=AuthSettings(issuer=oauth_server.issuer, audience=AUDIENCE)
    )
    legacy = Legacy(http, extra=bearer(oauth_server.token(sub="ann", scopes=["tickets:read"])))
    legacy.initialize("2025-03-26", {})
    forbidden(legacy.request("tools/call", {"name": "wipe", "arguments": {}}))
    # The fallback tool resumes a call only for a caller who may make it.
    writer = Legacy(http, extra=bearer(oauth_server.token(sub="ann", scopes=["tickets"])))
    writer.initialize("2025-03-26", {})
    asked = writer.call("wipe")
    eid = json.loads(asked["content"][1]["text"])["elicitationId"]
    legacy.session, legacy.version = writer.session, writer.version
    stolen = legacy.request(
        "tools/call",
        {"name": "sendElicitationResult", "arguments": {"elicitationId": eid, "action": "accept"}},
    )
    forbidden(stolen)  # the same principal, with a token that lacks the scope now
    done = writer.call(
        "sendElicitationResult",
        {"elicitationId": eid, "action": "accept", "content": {"confirm": True}},
    )
    assert json.loads(done["content"][0]["text"])["principal"] == "ann"  # the id was not spent


def whoami_of(mcp: Mcp, tool: str) -> dict[str, Any]:
    first = mcp.result(mcp.call(tool))
    if first["resultType"] == "complete":
        return dict(first["structuredContent"])
    done = mcp.result(mcp.call(tool, responses=YES_SURE, state=first["requestState"]))
    return dict(done["structuredContent"])


YES_SURE = {"sure": {"action": "accept", "content": {"confirm": True}}}


def test_scopes_without_auth_do_not_serve(tmp_path: Path, scoped: Project) -> None:
    with pytest.raises(SettingsError) as caught:
        app_client(tmp_path, scoped)
    assert "tickets:read, tickets:write" in caught.value.message
    assert "HOST_AUTH_TOKENS" in caught.value.message
