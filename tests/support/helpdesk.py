"""The help desk (the example project) and small projects for one test, with their settings.

``HELPDESK`` is the example ``specs/`` and ``handlers/``, loaded once; ``settings_for`` and
``use_tmp_data`` keep a test's data, store and help-desk database in its ``tmp_path``;
``ticket`` and ``emails`` read that database straight; ``write_project`` and ``survey_project``
write small projects of a test's own.
"""

from __future__ import annotations

import shutil
import sqlite3
from pathlib import Path
from typing import Any

import pytest

from host.settings import Settings
from host.spec import load_project
from host.spec.model import Project
from support.paths import HANDLERS, ROOT, SPECS

__all__ = [
    "HELPDESK",
    "NOT_CONFIRMED",
    "copy_helpdesk",
    "emails",
    "helpdesk_project",
    "settings_env",
    "settings_for",
    "survey_project",
    "ticket",
    "use_tmp_data",
    "write_project",
]

#: The answers that leave close_ticket's box unconfirmed, each with the reason the tool then gives.
NOT_CONFIRMED = [
    pytest.param({"action": "decline"}, "The user said no. Leave the ticket open.", id="decline"),
    pytest.param(
        {"action": "cancel"}, "The user dismissed the question without answering.", id="cancel"
    ),
    pytest.param(
        {"action": "accept", "content": {"confirm": False}},
        "The user didn't tick the box.",
        id="unticked",
    ),
]


def helpdesk_project() -> Project:
    """The example specs, loaded and checked the way ``host serve`` loads them."""
    return load_project(SPECS, HANDLERS)


def write_project(
    tmp_path: Path,
    server: str,
    tools: str,
    handlers: str,
    *,
    module: str = "work",
    prefix: str = "",
) -> tuple[Path, Path]:
    """A small project in ``tmp_path``: ``server.yaml`` and ``tools.yaml``, one handler module.

    Args:
        tmp_path: where the ``specs`` and ``handlers`` folders go.
        server: the server spec's text.
        tools: the tool specs' text.
        handlers: the handler module's source.
        module: the handler module's name (what the specs' ``module:function`` calls name).
        prefix: put before the folders' names, to keep two projects in one ``tmp_path`` apart.

    Returns:
        The specs folder and the handlers folder.
    """
    specs_dir, handlers_dir = tmp_path / f"{prefix}specs", tmp_path / f"{prefix}handlers"
    specs_dir.mkdir()
    handlers_dir.mkdir()
    (specs_dir / "server.yaml").write_text(server)
    (specs_dir / "tools.yaml").write_text(tools)
    (handlers_dir / f"{module}.py").write_text(handlers)
    return specs_dir, handlers_dir


def settings_for(tmp_path: Path, **changes: Any) -> Settings:
    """Settings for one test: data and store in ``tmp_path``, a fixed signing key."""
    values: dict[str, Any] = {
        "specs_dir": SPECS,
        "handlers_dir": HANDLERS,
        "secrets": ("test-key-1-0123456789abcdef0123456789",),
        "data_dir": tmp_path / "data",
    }
    values.update(changes)
    return Settings(**values)


def use_tmp_data(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Point the help-desk handlers at a fresh database in ``tmp_path``; return its path."""
    db = tmp_path / "helpdesk.db"
    monkeypatch.setenv("HELPDESK_DB", str(db))
    monkeypatch.setenv("HOST_DATA_DIR", str(tmp_path / "data"))
    return db


def ticket(db: Path, ticket_id: str) -> dict[str, Any] | None:
    """A ticket's row, read straight from the help-desk database."""
    with sqlite3.connect(db) as conn:
        conn.row_factory = sqlite3.Row
        row = conn.execute("SELECT * FROM tickets WHERE id = ?", (ticket_id,)).fetchone()
    return dict(row) if row else None


def emails(db: Path, ticket_id: str) -> int:
    """How many emails the help desk has sent about a ticket, read straight from its database."""
    with sqlite3.connect(db) as conn:
        row = conn.execute("SELECT count(*) FROM outbox WHERE ticket = ?", (ticket_id,)).fetchone()
    return int(row[0])


def copy_helpdesk(tmp_path: Path) -> Path:
    """The help desk's specs and handlers copied to ``tmp_path/site``; its spec folder."""
    site = tmp_path / "site"
    shutil.copytree(SPECS, site / "specs")
    shutil.copytree(HANDLERS, site / "handlers", ignore=shutil.ignore_patterns("__py*"))
    return site / "specs"


def settings_env(tmp_path: Path, **extra: str) -> dict[str, str]:
    """The variables that configure ``host.web.wsgi:app``: the help desk, data in ``tmp_path``."""
    return {
        "HOST_SPECS": str(SPECS),
        "HOST_HANDLERS": str(HANDLERS),
        "HOST_DATA_DIR": str(tmp_path / "data"),
        "HELPDESK_DB": str(tmp_path / "helpdesk.db"),
        "PYTHONPATH": str(ROOT),
        **extra,
    }


SURVEY_SERVER = """\
kind: server
name: survey
version: "1"
elicitation: {enabled: true}
"""

SURVEY_TOOL = """\
kind: tool
name: survey
description: Two questions in one round, with every kind of field, then an act.
input: {}
steps:
  - ask: who
    message: Who are you?
    form:
      name: {type: string, default: Ann, description: Your name}
      team:
        type: string
        oneOf: [{const: red, title: Red team}, {const: blue, title: Blue team}]
      tags: {type: array, items: {type: string, enum: [a, b, c]}, default: [a]}
  - ask: when
    message: Which day?
    form:
      day: {type: string, enum: [mon, tue]}
      urgent: {type: boolean, default: false}
    declined: {recorded: false}
  - act: survey:record
"""

SURVEY_HANDLER = """\
def record(name, team, tags, day, urgent):
    return {"name": name, "team": team, "tags": tags, "day": day, "urgent": urgent}
"""


def survey_project(tmp_path: Path) -> Project:
    """A small project whose one tool asks two questions in one round."""
    return load_project(
        *write_project(
            tmp_path, SURVEY_SERVER, SURVEY_TOOL, SURVEY_HANDLER, module="survey", prefix="survey-"
        )
    )


HELPDESK = helpdesk_project()
