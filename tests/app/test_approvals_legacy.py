"""Remembered approvals and audit records in legacy sessions: questions on the call's stream, and
questions through the fallback tool. Same core, same store, so the same rules."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from host.observers.batches import flush_all
from host.spec import load_project
from host.store import Store, open_store
from support.legacy import Legacy, legacy_client
from support.paths import FIXTURES

FIXTURE = FIXTURES / "approvals"
PROJECT = load_project(FIXTURE / "specs", FIXTURE / "handlers")
YES = {"action": "accept", "content": {"confirm": True}}


@pytest.fixture
def store(tmp_path: Path) -> Iterator[Store]:
    opened = open_store(f"sqlite:///{tmp_path / 'data' / 'store.db'}")
    yield opened
    opened.close()


def test_a_yes_on_a_legacy_stream_is_remembered_and_recorded(tmp_path: Path, store: Store) -> None:
    legacy: Legacy = legacy_client(tmp_path, PROJECT)
    legacy.initialize("2025-11-25")
    events = legacy.stream("restart_service", {"service": "api"})
    question = events.next()
    assert question["method"] == "elicitation/create"
    assert legacy.answer(question, YES).status_code == 202
    (final,) = events.rest()
    assert final["result"]["structuredContent"]["remembered"] is False

    again = legacy.call("restart_service", {"service": "api"})

    assert again["structuredContent"]["remembered"] is True
    flush_all()  # the app writes its records off the request path, in this process
    second, first = store.audit_records(tool="restart_service")
    assert [a["via"] for a in first.approvals] == ["asked"] and first.answers == {"restart": YES}
    assert [a["via"] for a in second.approvals] == ["remembered"]


def test_a_yes_through_the_fallback_tool_is_remembered_and_recorded(
    tmp_path: Path, store: Store
) -> None:
    legacy: Legacy = legacy_client(tmp_path, PROJECT)
    legacy.initialize("2025-03-26", {})
    asked = legacy.call("restart_service", {"service": "api"})
    question: dict[str, Any] = json.loads(asked["content"][1]["text"])

    done = legacy.call(
        "sendElicitationResult",
        {
            "elicitationId": question["elicitationId"],
            "action": "accept",
            "content": {"confirm": True},
        },
    )

    assert json.loads(done["content"][0]["text"])["remembered"] is False
    again = legacy.call("restart_service", {"service": "api"})
    assert json.loads(again["content"][0]["text"])["remembered"] is True
    flush_all()
    outcomes = [(r.outcome, r.principal) for r in store.audit_records(tool="restart_service")]
    assert outcomes == [("acted", "anonymous"), ("acted", "anonymous")]
