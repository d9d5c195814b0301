"""``host plan``, ``host tools`` and ``host init`` end to end, through the real command line."""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from host.machine.plan import assumed_answer
from support.paths import ROOT

pytestmark = pytest.mark.served

SPECS = ROOT / "specs"


def host(tmp_path: Path, *args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("HOST_", "HELPDESK_"))}
    env["HOST_DATA_DIR"] = str(tmp_path / "data")
    env["HELPDESK_DB"] = str(tmp_path / "helpdesk.db")
    return subprocess.run(
        [sys.executable, "-m", "host", *args],
        capture_output=True, text=True, env=env, cwd=cwd or tmp_path, timeout=120,
    )  # fmt: skip


def desk(tmp_path: Path, query: str, *params: str) -> list[tuple[object, ...]]:
    with sqlite3.connect(tmp_path / "helpdesk.db") as db:
        return db.execute(query, params).fetchall()


# host plan


def test_plan_shows_the_rounds_and_the_act_and_never_acts(tmp_path: Path) -> None:
    done = host(tmp_path, "plan", "close_ticket", "--specs", str(SPECS), "--arg", "id=T-1")
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0] == 'plan: close_ticket {"id": "T-1"}'
    assert "round 1" in lines and "round 2" in lines
    assert (
        '  confirm close: Close T-1 ("Cannot log in") and email the customer that it\'s resolved?'
        in lines
    )
    assert '      confirm: boolean, "Tick to close the ticket"' in lines
    assert '    answer (assumed): accept {"confirm": true}' in lines
    assert lines[-1] == (
        "  act helpdesk:close_ticket(id, ticket) would run last; the plan did not run it"
    )
    # The reads ran against the real database; the act did not: T-1 is open, no email went out.
    assert desk(tmp_path, "SELECT status FROM tickets WHERE id = ?", "T-1") == [("open",)]
    assert desk(tmp_path, "SELECT count(*) FROM outbox") == [(0,)]


def test_plan_of_a_destructive_act_leaves_the_data_alone(tmp_path: Path) -> None:
    done = host(tmp_path, "plan", "delete_ticket", "--specs", str(SPECS), "--args", '{"id": "T-3"}')
    assert done.returncode == 0, done.stderr
    assert "act helpdesk:delete_ticket(id) would run last" in done.stdout
    assert desk(tmp_path, "SELECT count(*) FROM tickets WHERE id = ?", "T-3") == [(1,)]


def test_plan_names_the_questions_a_when_skips(tmp_path: Path) -> None:
    asked = host(tmp_path, "plan", "assign_ticket", "--specs", str(SPECS), "--arg", "id=T-2")
    assert '  ask pick: Who should take T-2 ("Invoice total is wrong")?' in asked.stdout
    assert 'agent: string, "Support agent", choices: Nour, Sam, Priya' in asked.stdout
    skipped = host(
        tmp_path, "plan", "assign_ticket", "--specs", str(SPECS), "--arg", "id=T-2",
        "--arg", "agent=Sam",
    )  # fmt: skip
    assert "  skip pick: when: agent is undefined is false" in skipped.stdout
    assert "round 2" not in skipped.stdout
    assert desk(tmp_path, "SELECT agent FROM tickets WHERE id = ?", "T-2") == [("",)]


def test_plan_with_given_answers_shows_how_the_call_ends(tmp_path: Path) -> None:
    declined = host(
        tmp_path, "plan", "close_ticket", "--specs", str(SPECS), "--arg", "id=T-1",
        "--answer", "close=decline",
    )  # fmt: skip
    assert declined.returncode == 0
    assert "    answer (given): decline" in declined.stdout
    assert declined.stdout.splitlines()[-1].startswith('ends without acting: {"id": "T-1"')
    picked = host(
        tmp_path, "plan", "assign_ticket", "--specs", str(SPECS), "--arg", "id=T-2",
        "--answer", 'pick={"agent": "Priya"}', "--format", "json",
    )  # fmt: skip
    plan = json.loads(picked.stdout)
    first = plan["rounds"][0]["questions"][0]
    assert first["answer"] == {"action": "accept", "content": {"agent": "Priya"}}
    assert not first["assumed"]
    assert plan["act"] == {"handler": "helpdesk:assign_ticket", "reached": True, "run": False}


def test_plan_reports_a_call_that_would_fail(tmp_path: Path) -> None:
    missing = host(tmp_path, "plan", "close_ticket", "--specs", str(SPECS), "--arg", "id=T-9")
    assert missing.returncode == 1
    assert "fails: There's no ticket T-9." in missing.stdout
    bad = host(tmp_path, "plan", "close_ticket", "--specs", str(SPECS))
    assert bad.returncode == 1 and "'id' is a required property" in bad.stdout
    unknown = host(tmp_path, "plan", "nope", "--specs", str(SPECS))
    assert unknown.returncode == 1 and "no tool 'nope'" in unknown.stderr
    assert "Traceback" not in missing.stderr + bad.stderr + unknown.stderr


def test_plan_refuses_specs_with_errors_and_shows_them(tmp_path: Path) -> None:
    broken = ROOT / "tests" / "fixtures" / "broken" / "order.yaml"
    specs = tmp_path / "specs"
    specs.mkdir()
    (specs / "order.yaml").write_text(broken.read_text())
    done = host(tmp_path, "plan", "out_of_order", "--specs", str(specs))
    assert done.returncode == 2
    assert "[order]" in done.stderr and "errors in the specs" in done.stderr


def test_assumed_answers_fit_their_forms() -> None:
    form = {
        "type": "object",
        "properties": {
            "agent": {"type": "string", "enum": ["Nour", "Sam"]},
            "tier": {"type": "string", "oneOf": [{"const": "p1", "title": "Urgent"}]},
            "count": {"type": "integer", "minimum": 3},
            "note": {"type": "string"},
            "email": {"type": "string", "format": "email"},
            "ok": {"type": "boolean"},
            "tags": {"type": "array", "items": {"type": "string", "enum": ["a", "b"]}},
            "size": {"type": "string", "default": "M"},
        },
        "required": ["agent", "tier", "count", "email", "ok", "tags"],
    }
    assert assumed_answer(form) == {
        "action": "accept",
        "content": {
            "agent": "Nour",
            "tier": "p1",
            "count": 3,
            "email": "someone@example.com",
            "ok": True,
            "tags": ["a"],
            "size": "M",
        },
    }


# host tools


def test_tools_lists_questions_scopes_and_hints(tmp_path: Path) -> None:
    done = host(tmp_path, "tools", "--specs", str(SPECS))
    assert done.returncode == 0, done.stderr
    text = done.stdout
    assert "close_ticket  Close ticket  [destructive]" in text
    assert "  arguments: id (string, required)" in text
    assert "  asks: close (confirm)" in text
    assert "  asks: pick (ask) (agent) when agent is undefined" in text
    assert "list_outbox" in text and "  asks: nothing" in text
    listed = json.loads(host(tmp_path, "tools", "--specs", str(SPECS), "--format", "json").stdout)
    by_name = {t["name"]: t for t in listed}
    assert by_name["close_ticket"]["questions"][0]["kind"] == "confirm"
    assert by_name["close_ticket"]["act"] == "helpdesk:close_ticket"
    assert by_name["assign_ticket"]["questions"][0]["when"] == "agent is undefined"
    assert by_name["list_outbox"]["annotations"] == {"readOnlyHint": True}


def test_tools_shows_scopes_from_server_and_tool(tmp_path: Path) -> None:
    good = ROOT / "tests" / "fixtures" / "good"
    handlers = ROOT / "tests" / "fixtures" / "handlers"
    done = host(tmp_path, "tools", "--specs", str(good), "--handlers", str(handlers))
    assert done.returncode == 0, done.stderr
    assert "  scopes: tickets:read billing:refund billing:refund:large" in done.stdout


# host init


def test_init_makes_a_project_that_validates_and_passes_its_tests(tmp_path: Path) -> None:
    made = host(tmp_path, "init", "desk")
    assert made.returncode == 0, made.stderr
    root = tmp_path / "desk"
    for name in ("specs/server.yaml", "specs/notes.yaml", "handlers/notes.py", "spec.schema.json"):
        assert (root / name).is_file(), name
    assert json.loads((root / "spec.schema.json").read_text())["definitions"]["tool"]
    validated = host(tmp_path, "validate", "desk/specs")
    assert (validated.returncode, validated.stdout) == (0, "")
    tested = host(tmp_path, "test", "desk/specs")
    assert tested.returncode == 0, tested.stdout + tested.stderr
    assert "2 passed, 0 failed" in tested.stdout
    planned = host(tmp_path, "plan", "add_note", "--specs", "desk/specs", "--arg", "text=Hi")
    assert "act notes:add_note(text, notes) would run last" in planned.stdout
    assert not (tmp_path / "data" / "notes.json").exists()


def test_init_refuses_to_overwrite(tmp_path: Path) -> None:
    (tmp_path / "specs").mkdir()
    (tmp_path / "specs" / "notes.yaml").write_text("mine\n")
    done = host(tmp_path, "init")
    assert done.returncode == 1
    assert "already exists" in done.stderr
    assert (tmp_path / "specs" / "notes.yaml").read_text() == "mine\n"
    assert not (tmp_path / "specs" / "server.yaml").exists()


@pytest.mark.parametrize("command", ["plan", "tools", "init"])
def test_new_commands_have_help(tmp_path: Path, command: str) -> None:
    done = host(tmp_path, command, "--help")
    assert done.returncode == 0 and "usage: host " + command in done.stdout
