"""Redacted fields never reach the store in clear: the records that carry a legacy call between
rounds (the relay's answers, the fallback tool's question records) hold them encrypted.

Searched for in every SQLite file and its WAL; in every Redis key and its append-only file. The
fixture's handler also logs both values on ``ctx.log``: every log line, and every log message sent
to the client, shows them as "[redacted]"."""

from __future__ import annotations

import io
import json
import logging
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import redis

from host.logs import configure_logging
from host.observers.batches import flush_all
from host.spec import load_project
from support.legacy import Legacy, legacy_client
from support.paths import FIXTURES
from support.redis import RedisServer

FIXTURE = FIXTURES / "approvals"
PROJECT = load_project(FIXTURE / "specs", FIXTURE / "handlers")
RECIPIENT = "the-clear-recipient-5521"
NOTE = "the-clear-note-8830"
WRITE = {"action": "accept", "content": {"note": NOTE, "urgent": True}}
YES = {"action": "accept", "content": {"confirm": True}}


@dataclass
class Where:
    """Where a test's app keeps its store: the app's settings, and what to search."""

    url: str | None
    folder: Path


@pytest.fixture(params=["sqlite", "redis"])
def where(
    request: pytest.FixtureRequest, tmp_path: Path, redis_server: Callable[..., RedisServer]
) -> Where:
    if request.param == "sqlite":
        return Where(None, tmp_path / "data")
    (tmp_path / "data").mkdir()  # the handlers' own files
    redis = redis_server("--appendonly", "yes", "--appendfsync", "always")
    return Where(redis.url, redis.folder)


def client(tmp_path: Path, where: Where) -> Legacy:
    return legacy_client(tmp_path, PROJECT, store_url=where.url)


def redis_values(url: str) -> list[bytes]:
    """Every value of every key, read by its type (never DUMP: it may compress)."""
    db = redis.Redis.from_url(url)
    values: list[bytes] = []
    for key in db.scan_iter():
        kind = db.type(key)
        if kind == b"string":
            values.append(db.get(key) or b"")
        elif kind == b"list":
            values += db.lrange(key, 0, -1)
        elif kind == b"hash":
            values += [k + b"=" + v for k, v in db.hgetall(key).items()]
        elif kind in (b"set", b"zset"):
            values += list(db.smembers(key) if kind == b"set" else db.zrange(key, 0, -1))
        values.append(key)
    db.close()
    return values


def assert_nowhere_in_the_store(where: Where) -> None:
    if where.url is None:
        files = sorted(where.folder.glob("store.db*"))
        assert {f.name for f in files} >= {"store.db", "store.db-wal"}
        blobs = [(f.name, f.read_bytes()) for f in files]
    else:
        files = [f for f in where.folder.rglob("*") if f.is_file() and f.suffix != ".log"]
        assert any(".aof" in f.name for f in files), files
        blobs = [(f.name, f.read_bytes()) for f in files]
        blobs += [("a key", value) for value in redis_values(where.url)]
    for name, data in blobs:
        assert RECIPIENT.encode() not in data and NOTE.encode() not in data, name


def test_answers_relayed_on_a_stream_cross_the_store_encrypted(
    tmp_path: Path, where: Where
) -> None:
    legacy = client(tmp_path, where)
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
    assert_nowhere_in_the_store(where)


def asked(result: dict[str, Any]) -> str:
    eid: str = json.loads(result["content"][1]["text"])["elicitationId"]
    return eid


def test_fallback_questions_keep_redacted_fields_encrypted(tmp_path: Path, where: Where) -> None:
    legacy = client(tmp_path, where)
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
    assert_nowhere_in_the_store(where)


def test_a_handler_logging_redacted_values_on_ctx_log_writes_them_nowhere(
    tmp_path: Path, where: Where
) -> None:
    buffer = io.StringIO()
    logger = logging.getLogger("host")
    before = (list(logger.handlers), logger.level, logger.propagate)
    configure_logging(logging.DEBUG, stream=buffer)
    try:
        legacy = client(tmp_path, where)
        legacy.initialize("2025-11-25")
        assert legacy.result(legacy.request("logging/setLevel", {"level": "debug"})) == {}
        events = legacy.stream("send_note", {"recipient": RECIPIENT})
        assert legacy.answer(events.next(), WRITE).status_code == 202
        assert legacy.answer(events.next(), YES).status_code == 202
        rest = events.rest()
        flush_all()
    finally:
        logger.handlers[:] = before[0]
        logger.setLevel(before[1])
        logger.propagate = before[2]

    assert "isError" not in rest[-1]["result"], rest
    sent = [m["params"]["data"] for m in rest if m.get("method") == "notifications/message"]
    assert sent == [
        "sending a note to [redacted]: [redacted]",
        "sent '[redacted]' to [redacted]",
    ]
    text = buffer.getvalue()
    lines = [json.loads(line) for line in text.splitlines()]
    logged = [line for line in lines if line["logger"] == "host.handler.send_note"]
    assert [line["message"] for line in logged] == sent
    assert logged[1]["to"] == "[redacted]"
    assert RECIPIENT not in text and NOTE not in text
    assert_nowhere_in_the_store(where)
