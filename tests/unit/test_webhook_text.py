"""The webhook's ``text``: what a chat shows approvers, whatever a caller put in a value."""

from __future__ import annotations

import time

from host.observers.webhook import escaped, payload
from host.store.requests import ApprovalRequest


def _request(caller: str, message: str) -> ApprovalRequest:
    now = time.time()
    return ApprovalRequest(
        id="apr_1",
        binding="b",
        caller=caller,
        tool="restart",
        step="ops",
        message=message,
        approvers=("ops:approve",),
        needed=1,
        arguments={},
        answers={},
        definition="d",
        created=now,
        expires=now + 60,
    )


def test_plain_mentions_ping_nobody() -> None:
    # Mattermost notifies on a plain @channel, @all or @here: a caller's value never does.
    for mention in ("@channel", "@all", "@here"):
        text = escaped(f"restart web {mention}")
        assert mention not in text
        assert text.replace("\u200b", "") == f"restart web {mention}"


def test_a_look_alike_caller_is_named_with_its_code_points() -> None:
    text = payload("requested", _request("al\u0456ce", "restart web"), None)["text"]
    assert "asked by al\u0456ce (U+0456)" in text


def test_the_json_keeps_values_as_sent() -> None:
    data = payload("requested", _request("dave", "ping @here"), None)
    assert data["request"]["message"] == "ping @here"
    assert "@here" not in data["text"]
