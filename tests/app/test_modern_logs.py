"""JSON log lines: one object per line, a line per round, incidents with an id, no answers."""

from __future__ import annotations

import io
import json
import logging
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from host.logs import JsonFormatter, configure_logging, emit
from host.spec import load_project
from support.helpdesk import use_tmp_data
from support.logs import caught_lines
from support.modern import Mcp, accept, make_client


@pytest.fixture
def log_lines() -> Iterator[io.StringIO]:
    with caught_lines() as buffer:
        yield buffer


def lines(buffer: io.StringIO) -> list[dict[str, Any]]:
    return [json.loads(line) for line in buffer.getvalue().splitlines()]


def test_each_round_is_one_json_line_without_the_answers(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, log_lines: io.StringIO
) -> None:
    use_tmp_data(tmp_path, monkeypatch)
    mcp = make_client(tmp_path)
    result, _ = mcp.run("assign_ticket", {"id": "T-2"}, accept({"agent": "Priya"}))
    assert result["structuredContent"]["agent"] == "Priya"

    records = lines(log_lines)
    calls = [r for r in records if r.get("event") == "tool_call"]
    assert [(c["tool"], c["round"], c["outcome"]) for c in calls] == [
        ("assign_ticket", 1, "input_required"),
        ("assign_ticket", 2, "complete"),
    ]
    assert calls[0]["asked"] == ["pick"]
    assert calls[1]["acted"] is True
    assert all(isinstance(c["duration_ms"], int | float) for c in calls)
    assert all(c["level"] == "info" and c["logger"] == "host.protocol" for c in calls)
    assert "Priya" not in log_lines.getvalue()


def test_rejections_are_logged_with_their_code(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, log_lines: io.StringIO
) -> None:
    use_tmp_data(tmp_path, monkeypatch)
    mcp = make_client(tmp_path)
    mcp.call("close_ticket", {"id": "T-1"}, state="forged")
    records = lines(log_lines)
    (warning,) = [r for r in records if r.get("event") == "request_state_rejected"]
    assert warning["level"] == "warning"
    assert warning["reason"] == "bad signature or encoding"
    (rejected,) = [r for r in records if r.get("event") == "request_rejected"]
    assert rejected["code"] == -32602
    assert rejected["method"] == "tools/call"


CRASHING_SPEC = """
kind: server
name: crashy
version: 0.0.1
---
kind: tool
name: explode
description: Always fails inside its handler.
input: {properties: {id: {type: string}}, required: [id]}
steps:
  - act: boom:explode
"""

CRASHING_HANDLER = """
def explode(id):
    raise RuntimeError("database password is hunter2")
"""


def test_a_handler_crash_is_an_incident_in_the_log_and_a_generic_error_for_the_model(
    tmp_path: Path, log_lines: io.StringIO
) -> None:
    (tmp_path / "specs").mkdir()
    (tmp_path / "handlers").mkdir()
    (tmp_path / "specs" / "crash.yaml").write_text(CRASHING_SPEC)
    (tmp_path / "handlers" / "boom.py").write_text(CRASHING_HANDLER)
    project = load_project(tmp_path / "specs", tmp_path / "handlers")
    mcp: Mcp = make_client(tmp_path, project)

    result = mcp.result(mcp.call("explode", {"id": "x"}))
    assert result["isError"] is True
    text = result["content"][0]["text"]
    assert "hunter2" not in text
    records = lines(log_lines)
    (call,) = [r for r in records if r.get("event") == "tool_call"]
    assert call["outcome"] == "error"
    assert call["incident"] and call["incident"] in text
    (crash,) = [r for r in records if "traceback" in r]
    assert crash["incident"] == call["incident"]
    assert "RuntimeError" in crash["traceback"]


def test_formatter_keeps_extra_fields_and_stays_one_line() -> None:
    record = logging.LogRecord("host.x", logging.WARNING, __file__, 1, "two\nlines", None, None)
    record.__dict__["tool"] = "close_ticket"
    line = JsonFormatter().format(record)
    assert "\n" not in line
    data = json.loads(line)
    assert data["message"] == "two\nlines"
    assert data["tool"] == "close_ticket"
    assert data["level"] == "warning"
    assert data["ts"].endswith("+00:00")


def test_configuring_twice_does_not_duplicate_lines(log_lines: io.StringIO) -> None:
    configure_logging(stream=log_lines)
    logging.getLogger("host.test").info("once")
    assert len(lines(log_lines)) == 1


def test_a_line_written_directly_is_the_line_logging_writes(log_lines: io.StringIO) -> None:
    logger = logging.getLogger("host.protocol")
    fields = {"event": "tool_call", "tool": "close_ticket", "round": 2, "acted": True}

    emit(logger, logging.INFO, "tool call", fields)  # NOTE: the configured handler alone
    logger.info("tool call", extra=fields)

    direct, logged = lines(log_lines)
    assert direct.pop("ts")[:16] == logged.pop("ts")[:16]
    assert direct == logged
    assert list(direct) == list(logged)  # the same fields, in the same order


def test_a_line_goes_through_logging_when_another_handler_wants_it(
    log_lines: io.StringIO, caplog: pytest.LogCaptureFixture
) -> None:
    logger = logging.getLogger("host.protocol")
    logging.getLogger("host").propagate = True  # NOTE: so caplog's handler, on the root, sees it

    emit(logger, logging.INFO, "tool call", {"event": "tool_call", "tool": "list_outbox"})
    emit(logger, logging.DEBUG, "not at this level", {"event": "quiet"})

    (record,) = {id(r): r for r in caplog.records}.values()
    assert record.getMessage() == "tool call"
    assert getattr(record, "tool", None) == "list_outbox"
    assert [line["message"] for line in lines(log_lines)] == ["tool call"]
