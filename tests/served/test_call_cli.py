"""``host call``: a tool called from the terminal, its questions asked as real forms."""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from host.commands.prompt import Prompter
from support.paths import ROOT

pytestmark = pytest.mark.served


def host_call(tmp_path: Path, *args: str, answers: str = "") -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("HOST_", "HELPDESK_"))}
    env["HOST_DATA_DIR"] = str(tmp_path / "data")
    return subprocess.run(
        [sys.executable, "-m", "host", "call", *args, "--specs", str(ROOT / "specs")],
        input=answers, capture_output=True, text=True, env=env, cwd=tmp_path, timeout=60,
    )  # fmt: skip


def test_confirm_in_the_terminal_then_the_result_on_stdout(tmp_path: Path) -> None:
    done = host_call(tmp_path, "close_ticket", "--arg", "id=T-1", answers="y\n")
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == {"id": "T-1", "closed": True}
    assert 'Close T-1 ("Cannot log in")' in done.stderr
    # A confirm is asked once: its checkbox is the question.
    assert done.stderr.count("[y]es, [n]o (decline), [c]ancel") == 1
    assert "Answer it?" not in done.stderr
    emails = host_call(tmp_path, "list_outbox")
    assert json.loads(emails.stdout) == {
        "emails": ['To the customer of T-1: "Cannot log in" is resolved.']
    }


def test_declining_and_end_of_input(tmp_path: Path) -> None:
    declined = host_call(tmp_path, "delete_ticket", "--arg", "id=T-2", answers="n\n")
    assert json.loads(declined.stdout)["reason"] == "The user didn't confirm (decline)."
    cancelled = host_call(tmp_path, "delete_ticket", "--arg", "id=T-2")
    assert json.loads(cancelled.stdout)["reason"] == "The user didn't confirm (cancel)."


def test_list_shows_what_can_be_called(tmp_path: Path) -> None:
    listed = host_call(tmp_path, "--list")
    assert listed.returncode == 0, listed.stderr
    assert "close_ticket  Close ticket  [destructive]" in listed.stdout
    assert "  arguments: id (string, required)" in listed.stdout
    assert host_call(tmp_path).stdout == listed.stdout  # no tool named: the same list


def test_specs_with_errors_print_their_diagnostics(tmp_path: Path) -> None:
    specs = tmp_path / "specs"
    specs.mkdir()
    broken = ROOT / "tests" / "fixtures" / "broken" / "template-name.yaml"
    (specs / "t.yaml").write_text(broken.read_text())
    done = subprocess.run(
        [sys.executable, "-m", "host", "call", "unknown_names", "--specs", str(specs)],
        capture_output=True, text=True, cwd=tmp_path, timeout=60,
    )  # fmt: skip
    assert done.returncode == 2
    assert f"{specs / 't.yaml'}:15:27: error: 'idd' is not defined here" in done.stderr
    assert "[template-name]" in done.stderr and "Traceback" not in done.stderr


def test_host_call_does_not_load_the_test_kit() -> None:
    code = (
        "import sys, host.commands.call; "
        "print(sorted(m for m in sys.modules if m.startswith('host.testing') or m == 'pytest'))"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert done.stdout.strip() == "[]", done.stderr


def test_tool_errors_and_unknown_tools_exit_1(tmp_path: Path) -> None:
    missing = host_call(tmp_path, "close_ticket", "--arg", "id=T-9")
    assert missing.returncode == 1
    assert "There's no ticket T-9." in missing.stdout
    unknown = host_call(tmp_path, "nope")
    assert unknown.returncode == 1
    assert "no tool 'nope'" in unknown.stderr and "close_ticket" in unknown.stderr
    bad = host_call(tmp_path, "close_ticket", "--arg", "id")
    assert bad.returncode == 1 and "NAME=VALUE" in bad.stderr
    assert "Traceback" not in missing.stderr + unknown.stderr + bad.stderr


def ask(lines: list[str], schema: dict[str, Any]) -> tuple[dict[str, Any], str]:
    out = io.StringIO()
    feed = iter(lines)

    def read(_: str) -> str:
        try:
            return next(feed)
        except StopIteration:
            raise EOFError from None

    return Prompter(read, out).answer("Question?", schema), out.getvalue()


FORM = {
    "type": "object",
    "properties": {
        "agent": {"type": "string", "enum": ["Nour", "Sam"]},
        "tier": {"type": "string", "oneOf": [{"const": "p1", "title": "Urgent"}]},
        "tags": {"type": "array", "items": {"type": "string", "enum": ["a", "b", "c"]}},
        "count": {"type": "integer", "default": 3},
        "notify": {"type": "boolean"},
        "note": {"type": "string"},
    },
    "required": ["agent", "tier", "tags", "notify"],
}


def test_every_kind_of_field_with_retries_on_bad_input() -> None:
    answer, shown = ask(["", "9", "2", "Urgent", "1, 3", "", "maybe", "y", ""], FORM)
    assert answer == {
        "action": "accept",
        "content": {"agent": "Sam", "tier": "p1", "tags": ["a", "c"], "count": 3, "notify": True},
    }
    assert "choose a number from 1 to 2" in shown
    assert "type y or n" in shown
    assert "default 3" in shown and "optional" in shown


@pytest.mark.parametrize(("first", "action"), [("n", "decline"), ("c", "cancel")])
def test_decline_and_cancel(first: str, action: str) -> None:
    assert ask([first], FORM)[0] == {"action": action}


@pytest.mark.parametrize("stray", ["2", "maybe", "yess", "ok"])
def test_anything_but_y_n_c_or_enter_is_asked_again(stray: str) -> None:
    answer, shown = ask([stray, "n"], FORM)
    assert answer == {"action": "decline"}
    assert shown.count("Answer it?") == 2 and "type y, n or c" in shown


CONFIRM = {
    "type": "object",
    "properties": {"confirm": {"type": "boolean", "description": "Tick to close the ticket"}},
    "required": ["confirm"],
}


@pytest.mark.parametrize(
    ("lines", "expected"),
    [
        (["y"], {"action": "accept", "content": {"confirm": True}}),
        (["n"], {"action": "decline"}),
        (["c"], {"action": "cancel"}),
        (["", "2", "yes"], {"action": "accept", "content": {"confirm": True}}),
        ([], {"action": "cancel"}),
    ],
)
def test_a_confirm_is_one_question_with_no_default(
    lines: list[str], expected: dict[str, Any]
) -> None:
    answer, shown = ask(lines, CONFIRM)
    assert answer == expected
    assert "Tick to close the ticket? [y]es, [n]o (decline), [c]ancel: " in shown
    assert "Answer it?" not in shown


def test_end_of_input_or_cancel_mid_form_cancels() -> None:
    assert ask(["y", "1"], FORM)[0] == {"action": "cancel"}
    assert ask(["y", ":cancel"], FORM)[0] == {"action": "cancel"}


def test_numbers_are_checked() -> None:
    schema = {"type": "object", "properties": {"n": {"type": "number"}}, "required": ["n"]}
    answer, shown = ask(["y", "", "x", "2.5"], schema)
    assert answer == {"action": "accept", "content": {"n": 2.5}}
    assert "type a number" in shown and "an answer is required" in shown


def test_content_blocks_are_summarised_not_dumped() -> None:
    from host.commands.call import _block

    assert _block({"type": "text", "text": "hi"}) == "hi"
    assert _block({"type": "image", "mimeType": "image/png", "data": "AAAA"}) == (
        "[image image/png, 3 bytes]"
    )
    assert _block({"type": "resource", "resource": {"uri": "file:///a", "text": "x"}}) == (
        "[resource file:///a]\nx"
    )
    assert _block({"type": "resource_link", "uri": "file:///b"}) == "[link file:///b]"
