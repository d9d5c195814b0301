"""Names are shown as they are, their non-ASCII characters visible as such: a principal that
looks like ``alice`` but is spelled with a Cyrillic ``i`` (U+0456) is never shown as ``alice``
alone, in the inbox or in ``host audit``'s text line.
"""

from __future__ import annotations

from pathlib import Path

from host.auth import AuthSettings
from host.auth.names import shown
from host.auth.tokenfile import create_token
from host.commands.audit import line
from host.store.records import AuditRecord
from host.web.app import create_app
from support.helpdesk import settings_for
from support.inbox_memory import MemoryApprovals, sample_requests
from support.visitor import Visitor

LOOK_ALIKE = "al\u0456ce"  # a Cyrillic i


def test_a_name_is_shown_as_it_is_with_its_non_ascii_characters_named() -> None:
    assert shown("alice") == "alice"
    assert shown(LOOK_ALIKE) == f"{LOOK_ALIKE} (U+0456)"
    ivano = "\u0418\u0432\u0430\u043d\u043e"  # five distinct letters: four are listed
    assert shown(ivano) == f"{ivano} (U+0418 U+0432 U+0430 U+043D ...)"


def test_host_audit_shows_the_look_alike_caller_and_approver_for_what_they_are() -> None:
    record = AuditRecord(
        "c1", 1_796_000_000.0, LOOK_ALIKE, "restart_service", "acted",
        approvals=({"request": "apr_1", "via": "approvers", "status": "approved",
                    "approved_by": [LOOK_ALIKE],
                    "decisions": [{"principal": LOOK_ALIKE, "verdict": "approve",
                                   "reason": "", "time": "2026-11-30T00:53:00.000Z"}]},),
    )  # fmt: skip
    text = line(record)
    assert f"  {LOOK_ALIKE} (U+0456)  restart_service" in text
    assert f"by {LOOK_ALIKE} (U+0456)" in text


def test_the_inbox_shows_the_look_alike_caller_for_what_it_is(tmp_path: Path) -> None:
    tokens = tmp_path / "tokens"
    bob = create_token(tokens, "bob", ["ops:approve"])[0]
    seed = sample_requests()
    for request in seed:
        request["caller"] = LOOK_ALIKE
    settings = settings_for(tmp_path, auth=AuthSettings(tokens_file=tokens))
    app = create_app(settings=settings, approvals=MemoryApprovals(seed))
    visitor = Visitor(app).sign_in(bob)
    inbox = visitor.get("/approvals")
    assert inbox.status_code == 200
    assert f"by {LOOK_ALIKE} (U+0456)" in inbox.text
    page = visitor.get("/approvals/requests/req-restart")
    assert f"<dd>{LOOK_ALIKE} (U+0456)</dd>" in page.text
