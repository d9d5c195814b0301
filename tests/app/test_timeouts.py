"""Time limits on handlers: a read that hangs ends the call on time, saying so.

(Acts that outlive their limit are in tests/served/test_acts_faults.py: they keep running, and a
retry returns their result.)
"""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from host.spec import load_project
from host.spec.model import Project
from support.modern import Mcp, make_client

SPECS = """
kind: server
name: slow
version: "1"
timeouts: {read: 300ms}
---
kind: tool
name: lookup
description: Looks something up slowly.
annotations: {readOnlyHint: true}
input: {properties: {seconds: {type: number}}, required: [seconds]}
steps:
  - read: value
    call: s:slow
  - act: s:show
---
kind: tool
name: patient
description: The same, with a limit of its own.
annotations: {readOnlyHint: true}
input: {properties: {seconds: {type: number}}, required: [seconds]}
steps:
  - read: value
    call: s:slow
    timeout: 2s
  - act: s:show
"""

HANDLERS = """
import time

def slow(seconds):
    time.sleep(seconds)
    return seconds

def show(value):
    return {"value": value}
"""


@pytest.fixture
def slow(tmp_path: Path) -> Project:
    (tmp_path / "specs").mkdir()
    (tmp_path / "handlers").mkdir()
    (tmp_path / "specs" / "slow.yaml").write_text(SPECS)
    (tmp_path / "handlers" / "s.py").write_text(HANDLERS)
    return load_project(tmp_path / "specs", tmp_path / "handlers")


def test_a_read_past_its_limit_ends_the_call_on_time(tmp_path: Path, slow: Project) -> None:
    mcp: Mcp = make_client(tmp_path, slow)
    started = time.monotonic()
    result = mcp.result(mcp.call("lookup", {"seconds": 5}))
    assert time.monotonic() - started < 2.5
    assert result["isError"] is True
    (block,) = result["content"]
    assert "looking up value took longer than 0.3 seconds" in block["text"]
    assert "Nothing was done" in block["text"]
    fast = mcp.result(mcp.call("lookup", {"seconds": 0}))
    assert fast["structuredContent"] == {"value": 0}


def test_a_step_limit_beats_the_servers(tmp_path: Path, slow: Project) -> None:
    mcp: Mcp = make_client(tmp_path, slow)
    result = mcp.result(mcp.call("patient", {"seconds": 0.6}))
    assert result["structuredContent"] == {"value": 0.6}
