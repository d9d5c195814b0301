"""One name, one person: a JWT whose ``sub`` names a static token never acts as its holder.

The first version took a static token named ``alice`` and a JWT with ``sub: alice`` for the same
principal: the JWT opened alice's ``requestState``, her session and her remembered approvals. Now
such a JWT is refused (401 ``invalid_token``); other subjects, and alice's own token, work as
before. Nor does it rest on that refusal: what a caller keeps is owned by its principal qualified
by source (``jwt:alice`` is never ``alice``), so once alice's token is revoked and a JWT named
alice is let in, it still opens none of her states, sessions or remembered approvals. A ``sub`` that
only reads as ``alice`` (``ALICE``, fullwidth letters, a Cyrillic ``i``) is refused as ``alice``
is. A ``sub`` with control or bidi characters is refused too: a principal is printed and stored,
and must read as one name.
"""

from __future__ import annotations

import time
from pathlib import Path

import falcon.testing
import pytest

from host.auth import Authenticator, AuthError, AuthSettings
from host.auth.tokenfile import create_token, revoke_token
from host.observers.batches import flush_all
from host.spec import load_project
from host.store import open_store
from support.legacy import Legacy
from support.modern import Mcp, app_client
from support.oauth import AUDIENCE, MockAuthServer
from support.protected import WHO, WHOAMI, YES, refused

pytestmark = pytest.mark.served

#: A second tool whose confirm is remembered for its caller.
REMEMBERED = """---
kind: tool
name: kept
description: A confirm that is remembered.
steps:
  - confirm: sure
    message: Go on?
    remember: {for: 1h}
  - act: who:whoami
"""


@pytest.fixture
def tokens(tmp_path: Path) -> Path:
    return tmp_path / "tokens"


@pytest.fixture
def alice(tokens: Path) -> str:
    """The static token named ``alice``."""
    return create_token(tokens, "alice", [])[0]


@pytest.fixture
def http(
    tmp_path: Path, oauth_server: MockAuthServer, tokens: Path, alice: str
) -> falcon.testing.TestClient:
    (tmp_path / "specs").mkdir()
    (tmp_path / "handlers").mkdir()
    (tmp_path / "specs" / "who.yaml").write_text(WHOAMI)
    (tmp_path / "handlers" / "who.py").write_text(WHO)
    project = load_project(tmp_path / "specs", tmp_path / "handlers")
    settings = AuthSettings(issuer=oauth_server.issuer, audience=AUDIENCE, tokens_file=tokens)
    return app_client(tmp_path, project, auth=settings)


def test_a_jwt_named_like_a_static_token_does_not_open_its_state(
    http: falcon.testing.TestClient, oauth_server: MockAuthServer, alice: str
) -> None:
    owner = Mcp(http, token=alice)
    state = owner.result(owner.call("whoami"))["requestState"]

    impostor = Mcp(http, token=oauth_server.token(sub="alice"))
    refused(impostor.call("whoami", responses=YES, state=state))
    refused(impostor.call("whoami"))

    done = owner.result(owner.call("whoami", responses=YES, state=state))
    assert done["structuredContent"]["principal"] == "alice"
    other = Mcp(http, token=oauth_server.token(sub="carol"))
    assert other.result(other.call("whoami"))["resultType"] == "input_required"


def test_the_refusal_follows_the_tokens_file(
    oauth_server: MockAuthServer, tokens: Path, alice: str
) -> None:
    # NOTE: changed on purpose: a revoked name used to let a JWT ``sub: alice`` become alice's
    # owner. It is let in again now, but as its own owner, ``jwt:alice``.
    settings = AuthSettings(issuer=oauth_server.issuer, audience=AUDIENCE, tokens_file=tokens)
    auth = Authenticator(settings, tokens_check_interval=0.0)
    token = oauth_server.token(sub="alice")
    with pytest.raises(AuthError) as caught:
        auth.authenticate(f"Bearer {token}")
    assert caught.value.kind == "invalid_token"
    assert "the name of a static token" in caught.value.reason
    static = auth.authenticate(f"Bearer {alice}")
    assert static.principal == static.owner == "alice"
    assert auth.authenticate(f"Bearer {oauth_server.token(sub='alice2')}").principal == "alice2"
    revoke_token(tokens, "alice")
    jwt = auth.authenticate(f"Bearer {token}")
    assert jwt.principal == "alice" and jwt.owner == "jwt:alice" != static.owner


def test_once_her_token_is_revoked_a_jwt_named_alice_still_opens_nothing_of_hers(
    tmp_path: Path, oauth_server: MockAuthServer, tokens: Path, alice: str
) -> None:
    (tmp_path / "specs").mkdir()
    (tmp_path / "handlers").mkdir()
    (tmp_path / "specs" / "who.yaml").write_text(WHOAMI + REMEMBERED)
    (tmp_path / "handlers" / "who.py").write_text(WHO)
    project = load_project(tmp_path / "specs", tmp_path / "handlers")
    settings = AuthSettings(issuer=oauth_server.issuer, audience=AUDIENCE, tokens_file=tokens)
    http = app_client(tmp_path, project, auth=settings)
    owner = Mcp(http, token=alice)
    state = owner.result(owner.call("whoami"))["requestState"]
    session = Legacy(http, extra={"Authorization": f"Bearer {alice}"})
    session.initialize()
    kept = owner.result(owner.call("kept"))
    assert owner.result(owner.call("kept", responses=YES, state=kept["requestState"]))["content"]
    assert "structuredContent" in owner.result(owner.call("kept"))  # remembered: not asked
    revoke_token(tokens, "alice")
    time.sleep(1.2)  # NOTE: the app looks at the tokens file at most once a second

    impostor = Mcp(http, token=oauth_server.token(sub="alice"))
    opened = impostor.call("whoami", responses=YES, state=state)
    assert opened.status_code == 400, opened.text
    assert opened.json["error"]["message"] == "Invalid or expired requestState"
    hijack = Legacy(http, session=session.session, version=session.version)
    hijack.extra["Authorization"] = f"Bearer {oauth_server.token(sub='alice')}"
    assert hijack.post(hijack.body("tools/list")).status_code == 404  # her session is not his
    asked = impostor.result(impostor.call("kept"))
    assert asked["resultType"] == "input_required"  # alice's remembered yes is not his
    done = impostor.result(impostor.call("whoami", responses=YES, state=impostor.result(
        impostor.call("whoami"))["requestState"]))  # fmt: skip
    assert done["structuredContent"]["principal"] == "alice"  # his own call goes on as before

    flush_all()  # NOTE: the app writes audit records off the request path, in this process
    store = open_store(f"sqlite:///{tmp_path / 'data' / 'store.db'}")
    try:
        trail = [(r.principal, r.tool) for r in store.audit_records(tool="whoami")]
        mine = store.audit_records(tool="kept", principal="alice")
    finally:
        store.close()
    assert trail == [("jwt:alice", "whoami")]  # a reviewer tells the two alices apart
    assert len(mine) == 2 and [a["via"] for a in mine[0].approvals] == ["remembered"]


@pytest.mark.parametrize(
    "sub", ["mallory\n2026-01-01T00:00:00Z  alice", "\x1b[2Jroot", "evil\u202etxt", "x" * 1025]
)
def test_a_sub_that_would_not_print_as_one_name_is_refused(
    oauth_server: MockAuthServer, sub: str
) -> None:
    auth = Authenticator(AuthSettings(issuer=oauth_server.issuer, audience=AUDIENCE))
    with pytest.raises(AuthError) as caught:
        auth.authenticate(f"Bearer {oauth_server.token(sub=sub)}")
    assert "unprintable characters or is too long" in caught.value.reason


# NOTE: U+0456 CYRILLIC SMALL LETTER BYELORUSSIAN-UKRAINIAN I, and fullwidth Latin letters.
LOOK_ALIKES = [
    "ALICE",
    "Alice",
    "al\u0456ce",
    "\uff41\uff4c\uff49\uff43\uff45",
    "aIice",
    "AL\u0406CE",
]


def test_a_sub_that_reads_as_a_static_tokens_name_is_refused(
    http: falcon.testing.TestClient, oauth_server: MockAuthServer, alice: str
) -> None:
    for sub in LOOK_ALIKES:
        refused(Mcp(http, token=oauth_server.token(sub=sub)).call("whoami"))
    owner = Mcp(http, token=alice)
    assert owner.result(owner.call("whoami"))["resultType"] == "input_required"


def test_a_sub_that_only_resembles_a_static_tokens_name_is_let_in_as_written(
    http: falcon.testing.TestClient, oauth_server: MockAuthServer
) -> None:
    for sub in ["alicia", "bob", "al1ce-ops", "\u0430\u0431\u0432"]:
        caller = Mcp(http, token=oauth_server.token(sub=sub))
        state = caller.result(caller.call("whoami"))["requestState"]
        done = caller.result(caller.call("whoami", responses=YES, state=state))
        assert done["structuredContent"]["principal"] == sub  # shown as it is, never folded
