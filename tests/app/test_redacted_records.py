"""Redacted fields never reach the store in clear: the records that carry a legacy call between
rounds (the relay's answers, the fallback tool's question records) hold them encrypted."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from host.observers.batches import flush_all
from host.spec import load_project
from support.legacy import Legacy, legacy_client
from support.paths import FIXTURES

FIXTURE = FIXTURES / "approvals"
PROJECT = load_project(FIXTURE / "specs", FIXTURE / "handlers")
RECIPIENT = "the-clear-recipient-5521"
NOTE = "the-clear-note-8830"
WRITE = {"action": "accept", "content": {"note": NOTE, "urgent": True}}
YES = {"action": "accept", "content": {"confirm": True}}


def assert_nowhere_in_the_store(data_dir: Path) -> None:
    files = sorted(data_dir.glob("store.db*"))
    assert {f.name for f in files} >= {"store.db", "store.db-wal"}
    for path in files:
        data = path.read_bytes()
        assert RECIPIENT.encode() not in data and NOTE.encode() not in data, path.name


def test_answers_relayed_on_a_stream_cross_the_store_encrypted(tmp_path: Path) -> None:
    legacy: Legacy = legacy_client(tmp_path, PROJECT)
    legacy.initialize("2025-11-25")
    events = legacy.stream("send_note", {"recipient": RECIPIENT})
    write = events.next()
    assert legacy.answer(write, WRITE).status_code == 202
    send = events.next()
    assert send["method"] == "elicitation/create"
    assert legacy.answer(send, YES).status_code == 202
    (final,) = events.rest()

    assert "isError" not in final["result"], final
    flush_all()
    assert_nowhere_in_the_store(tmp_path / "data")


def asked(result: dict[str, Any]) -> str:
    eid: str = json.loads(result["content"][1]["text"])["elicitationId"]
    return eid


def test_fallback_questions_keep_redacted_fields_encrypted(tmp_path: Path) -> None:
    legacy: Legacy = legacy_client(tmp_path, PROJECT)
    legacy.initialize("2025-03-26", {})
    first = legacy.call("send_note", {"recipient": RECIPIENT})
    second = legacy.call(
        "sendElicitationResult",
        {"elicitationId": asked(first), "action": "accept", "content": WRITE["content"]},
    )
    done = legacy.call(
        "sendElicitationResult",
        {"elicitationId": asked(second), "action": "accept", "content": {"confirm": True}},
    )

    assert "isError" not in done, done
    flush_all()
    assert_nowhere_in_the_store(tmp_path / "data")
