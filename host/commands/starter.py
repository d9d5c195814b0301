"""The files ``host init`` writes: a server, a tool with a confirm, its handler, its tests.

Kept as text here (not package data) so that the starter is visible, reviewed and tested like
code: ``tests/served/test_authoring_commands.py`` validates it and runs its examples.
"""

from __future__ import annotations

__all__ = ["FILES"]

SERVER = """\
# yaml-language-server: $schema=../spec.schema.json
kind: server
name: my-tools
version: 0.1.0
instructions: Tools for the team's notes.
elicitation:
  enabled: true            # tools may ask the user questions
"""

TOOL = """\
# yaml-language-server: $schema=../spec.schema.json
kind: tool
name: add_note
title: Add a note
description: >-
  Save a short note for the team. Shows the note to the user and saves it only after they confirm.
annotations: {destructiveHint: false}
input:
  properties:
    text: {type: string, maxLength: 500, description: "The note, one or two sentences"}
  required: [text]
steps:
  - read: notes                    # reads run on every round; they must not change anything
    call: notes:list_notes
  - confirm: save                  # nothing below runs until the user ticks the box
    message: 'Save this note? "{{ text }}" ({{ notes | length }} saved so far)'
    label: Tick to save the note
    declined: {saved: false, reason: The user said no. Nothing was saved.}
    cancelled: {saved: false, reason: The user dismissed the question. Nothing was saved.}
    unticked: {saved: false, reason: The user did not tick the box. Nothing was saved.}
  - act: notes:add_note            # the one step that changes something, run at most once
examples:                          # run by `host test` and by pytest
  - name: saves the note after a yes
    arguments: {text: Call the plumber}
    answers:
      save: {action: accept, content: {confirm: true}}
    expect:
      asks: [save]
      result: {saved: true, count: 1}
  - name: saves nothing on a no
    arguments: {text: Call the plumber}
    answers:
      save: {action: decline}
    expect:
      result: {saved: false}
"""

HANDLER = '''\
"""Handlers of the notes tool: plain functions; the host passes parameters by name."""

import json
from pathlib import Path


def _notes_file(ctx) -> Path:
    # ctx.data_dir is the host's data directory (a fresh one for every test and example).
    return Path(ctx.data_dir) / "notes.json"


def list_notes(ctx):
    """The notes saved so far (a read: it changes nothing)."""
    path = _notes_file(ctx)
    return json.loads(path.read_text(encoding="utf-8")) if path.exists() else []


def add_note(text, notes, ctx):
    """Save one more note (the act: `notes` is what the read returned)."""
    path = _notes_file(ctx)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps([*notes, text]), encoding="utf-8")
    return {"saved": True, "count": len(notes) + 1}
'''

# NOTE: pytest finds this file from the directory it is given (`pytest DIR`) before the one it
# runs in, so the relative paths below hold wherever pytest starts.
PYTEST_INI = """\
# pytest settings of these specs: run `pytest` here, or `pytest DIR` from any directory.
# The host's pytest plugin (installed with host) reads the host_* keys.
[pytest]
# The spec directory the `mcp` fixture serves, relative to this file.
host_specs = specs
# Where pytest looks when run here without arguments: the tests, and the specs, whose
# examples: run as tests too.
testpaths = tests specs
"""

TESTS = '''\
"""Tests of the notes tool through the real host: the `mcp` fixture serves ../specs.

Each test gets a fresh data directory, so notes saved in one test are gone in the next.
"""

YES = {"action": "accept", "content": {"confirm": True}}


def test_a_note_is_saved_after_a_yes(mcp):
    result = mcp.tools.call("add_note", {"text": "Call the plumber"}, answers={"save": YES})
    assert result.asked == ["save"]
    assert result.json() == {"saved": True, "count": 1}


def test_the_count_grows_with_each_note(mcp):
    mcp.tools.call("add_note", {"text": "Call the plumber"}, answers={"save": YES})
    second = mcp.tools.call("add_note", {"text": "Buy milk"}, answers={"save": YES})
    assert second.json()["count"] == 2


def test_nothing_is_saved_on_a_no(mcp):
    declined = mcp.tools.call("add_note", {"text": "Call the plumber"}, answers={"save": "decline"})
    assert declined.json()["saved"] is False
    after = mcp.tools.call("add_note", {"text": "Buy milk"}, answers={"save": YES})
    assert after.json()["count"] == 1
'''

#: Every file, by its path relative to the directory ``host init`` fills (the schema is added).
FILES = {
    "specs/server.yaml": SERVER,
    "specs/notes.yaml": TOOL,
    "handlers/notes.py": HANDLER,
    "tests/test_notes.py": TESTS,
    "pytest.ini": PYTEST_INI,
}
