"""Handlers that return what JSON has no form for: the call is answered, and its act recorded.

A result holding a datetime (a database row's), a Decimal, a metric's NaN or a lone surrogate was
answered with an HTTP 500 once its act had run (the reply could not be encoded), and a later
round's act could not record it. Such values are written as their ``str()`` (non-finite numbers
by name, a lone surrogate as U+FFFD), the same in the text and the structured content, on every
protocol revision.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from host.spec import load_project
from host.spec.model import Project
from support.helpdesk import write_project
from support.legacy import legacy_client, structured
from support.modern import Mcp, accept, make_client

SERVER = """
kind: server
name: rows
version: "1"
elicitation: {enabled: true}
"""

TOOLS = """
kind: tool
name: last_login
description: When someone last signed in.
annotations: {readOnlyHint: true}
input: {properties: {}}
steps:
  - act: rows:last_login
---
kind: tool
name: close_books
description: Closes the books, after a yes.
annotations: {destructiveHint: true}
input: {properties: {}}
steps:
  - confirm: sure
    message: Close the books?
  - act: rows:close_books
"""

HANDLERS = """
import datetime, decimal

def last_login():
    return {"at": datetime.datetime(2026, 12, 2, 1, 2, 3), "score": float("nan")}

def close_books():
    by = b"caf\\xe9".decode("utf-8", "surrogateescape")  # a lone surrogate, as from a file name
    return {"closed": datetime.date(2026, 12, 2), "total": decimal.Decimal("10.50"), "by": by}
"""

LOGIN = {"at": "2026-12-02 01:02:03", "score": "nan"}
BOOKS = {"closed": "2026-12-02", "total": "10.50", "by": "caf\ufffd"}


@pytest.fixture
def rows(tmp_path: Path) -> Project:
    return load_project(*write_project(tmp_path, SERVER, TOOLS, HANDLERS, module="rows"))


def test_a_first_rounds_result_is_answered_on_both_protocols(tmp_path: Path, rows: Project) -> None:
    mcp: Mcp = make_client(tmp_path, rows)
    assert mcp.result(mcp.call("last_login"))["structuredContent"] == LOGIN
    legacy = legacy_client(tmp_path, rows)
    legacy.initialize()
    assert structured(legacy.call("last_login")) == LOGIN


def test_a_later_rounds_result_is_recorded_and_replayed(tmp_path: Path, rows: Project) -> None:
    mcp: Mcp = make_client(tmp_path, rows)
    asked = mcp.result(mcp.call("close_books"))
    assert asked["resultType"] == "input_required"
    responses = {"sure": dict(accept({"confirm": True})("sure", {}))}
    state = asked["requestState"]
    done = mcp.result(mcp.call("close_books", responses=responses, state=state))
    assert done["structuredContent"] == BOOKS
    # NOTE: the same final round again is answered from the act's record, not run twice.
    again = mcp.result(mcp.call("close_books", responses=responses, state=state))
    assert again["structuredContent"] == BOOKS
