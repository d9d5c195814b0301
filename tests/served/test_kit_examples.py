"""``host test``: spec examples run like tests, and the testing page's examples kept honest."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from host.cli import main
from support.paths import ROOT

pytestmark = pytest.mark.served

pytest_plugins = ["pytester"]

DOCS = ROOT / "docs" / "testing-specs.md"

SERVER = "kind: server\nname: kit\nversion: 0.0.1\nelicitation: {enabled: true}\n"

TOOL = """\
kind: tool
name: close
description: Close a ticket after asking.
input:
  properties:
    id: {type: string}
  required: [id]
steps:
  - read: ticket
    call: h:get
    missing: There's no ticket {{ id }}.
  - confirm: sure
    message: Close {{ id }}?
    declined: {id: "{{ id }}", closed: false, reason: no}
  - act: h:close
examples:
"""

HANDLERS = """\
import json
import os
from pathlib import Path


def get(id):
    return {"id": id} if id.startswith("T-") else None


def close(id, ctx):
    path = Path(os.environ["HOST_DATA_DIR"]) / "closed.json"
    closed = json.loads(path.read_text()) if path.exists() else []
    closed.append(id)
    path.write_text(json.dumps(closed))
    return {"id": id, "closed": True, "count": len(closed), "extra": os.environ.get("KIT_EXTRA")}
"""

YES = "{sure: {action: accept, content: {confirm: true}}}"


def spec_dir(tmp_path: Path, examples: str, *, tool: str = TOOL) -> Path:
    specs = tmp_path / "specs"
    specs.mkdir()
    (specs / "server.yaml").write_text(SERVER)
    (specs / "tools.yaml").write_text(tool + examples)
    (tmp_path / "handlers").mkdir()
    (tmp_path / "handlers" / "h.py").write_text(HANDLERS)
    return specs


def host_test(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, list[str], str]:
    code = main(["test", *args])
    out, err = capsys.readouterr()
    return code, out.splitlines(), err


PASSING = f"""\
  - name: closes on yes
    arguments: {{id: T-1}}
    answers: {YES}
    expect: {{asks: [sure], result: {{closed: true, count: 1}}}}
  - name: closes another, from fresh data
    arguments: {{id: T-2}}
    answers: {YES}
    expect: {{result: {{id: T-2, count: 1}}}}
  - name: keeps it on no
    arguments: {{id: T-3}}
    answers: {{sure: {{action: decline}}}}
    expect: {{result: {{closed: false}}, text: '"reason": "no"'}}
  - name: a malformed answer is rejected
    arguments: {{id: T-3}}
    answers: {{sure: {{action: accept, content: {{confirm: "yes"}}}}}}
    expect: {{error: -32602, text: does not match the requested schema}}
  - name: an unknown ticket is a tool error
    arguments: {{id: X}}
    expect: {{is_error: true, asks: [], text: There's no ticket X.}}
"""


def test_passing_examples_print_a_line_each_and_the_summary(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    specs = spec_dir(tmp_path, PASSING)
    code, lines, _ = host_test(capsys, str(specs))
    assert code == 0
    assert lines[-1] == "5 passed, 0 failed"
    assert re.fullmatch(r"ok    .*tools\.yaml:\d+  close > closes on yes", lines[0])
    assert len(lines) == 6


FAILING = f"""\
  - name: wrong result
    arguments: {{id: T-1}}
    answers: {YES}
    expect: {{result: {{closed: false, count: 1}}}}
  - name: wrong questions
    arguments: {{id: T-1}}
    answers: {YES}
    expect: {{asks: []}}
  - name: unexpected tool error
    arguments: {{id: X}}
    expect: {{result: {{closed: true}}}}
  - name: expected an error
    arguments: {{id: T-1}}
    answers: {YES}
    expect: {{error: -32602}}
  - name: no answer
    arguments: {{id: T-1}}
    expect: {{result: {{closed: true}}}}
  - name: answer never asked
    arguments: {{id: X}}
    answers: {YES}
    expect: {{is_error: true}}
  - name: wrong text
    arguments: {{id: T-1}}
    answers: {{sure: {{action: cancel}}}}
    expect: {{text: closed}}
"""


def test_failing_examples_say_what_differed_and_exit_1(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    specs = spec_dir(tmp_path, FAILING)
    code, lines, _ = host_test(capsys, str(specs))
    output = "\n".join(lines)
    assert code == 1
    assert lines[-1] == "0 passed, 7 failed"
    assert sum(line.startswith("FAIL  ") for line in lines) == 7
    for shown in [
        "result.closed: expected false, got true",
        '-  "closed": false,',
        '+  "closed": true,',
        'asks: expected [], it asked ["sure"]',
        'the call returned a tool error: "There\'s no ticket X."',
        "error: expected JSON-RPC error -32602, but it returned a result:",
        "close asked 'sure', which the answers do not cover (they answer nothing):",
        "sure (round 1): Close T-1?",
        'answers: given for ["sure"], which were never asked (asked: [])',
        'text: expected to contain "closed", got',
    ]:
        assert shown in output, shown


def test_a_file_or_a_keyword_selects_examples(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    specs = spec_dir(tmp_path, PASSING)
    code, lines, _ = host_test(capsys, str(specs / "tools.yaml"), "-k", "fresh")
    assert (code, lines[-1]) == (0, "1 passed, 0 failed")
    code, lines, _ = host_test(capsys, str(specs / "server.yaml"))
    assert lines == [
        "no examples found: add `examples:` to a tool to test it",
        "0 passed, 0 failed",
    ]
    assert code == 0


def test_env_points_handler_variables_into_each_examples_data(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    examples = f"""\
  - name: sees its variable
    arguments: {{id: T-1}}
    answers: {YES}
    expect: {{text: /extra.db}}
"""
    specs = spec_dir(tmp_path, examples)
    code, lines, _ = host_test(capsys, str(specs), "--env", "KIT_EXTRA={data_dir}/extra.db")
    assert (code, lines[-1]) == (0, "1 passed, 0 failed")
    code, _, err = host_test(capsys, str(specs), "--env", "oops")
    assert code == 2
    assert "--env wants NAME=VALUE, got 'oops'" in err


def test_specs_with_errors_or_a_missing_path_exit_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    specs = spec_dir(tmp_path, PASSING, tool=TOOL.replace("call: h:get", "call: h:nope"))
    code, lines, err = host_test(capsys, str(specs))
    assert code == 2
    assert "have errors:" in err
    assert re.search(r"tools\.yaml:\d+:\d+: error: .*'nope'.*\[handler-missing\]", err)
    assert lines == []
    code, _, err = host_test(capsys, str(tmp_path / "nowhere"))
    assert code == 2
    assert "does not exist" in err


def docs_block(language: str, containing: str) -> str:
    """The fenced block of the testing page in ``language`` that contains ``containing``."""
    blocks = re.findall(rf"```{language}\n(.*?)```", DOCS.read_text(), flags=re.S)
    found = [block for block in blocks if containing in block]
    assert len(found) == 1, f"{DOCS.name} has {len(found)} {language} blocks with {containing!r}"
    return found[0]


def test_the_yaml_example_of_the_docs_passes(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    specs = tmp_path / "specs"
    specs.mkdir()
    shutil.copy(ROOT / "specs" / "server.yaml", specs / "server.yaml")
    (specs / "tickets.yaml").write_text(docs_block("yaml", "an unticked box keeps it open"))
    code, lines, err = host_test(capsys, str(specs), "--handlers", str(ROOT / "handlers"))
    assert err == ""
    assert (code, lines[-1]) == (0, "5 passed, 0 failed"), "\n".join(lines)


def test_the_pytest_example_of_the_docs_is_the_test_file_that_runs() -> None:
    source = (ROOT / "tests" / "docs" / "test_kit_docs_example.py").read_text()
    assert docs_block("python", "def test_close_ticket_asks_then_closes") == source


def test_the_protocol_example_of_the_docs_passes(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_raw=docs_block("python", "mcp.raw.request"))
    result = pytester.runpytest("-p", "no:cacheprovider", f"--host-specs={ROOT / 'specs'}")
    result.assert_outcomes(passed=1)


def test_the_repository_specs_examples_pass_through_the_installed_command() -> None:
    # NOTE: a real process through the console script, the way CI and users run it.
    done = subprocess.run(
        [str(Path(sys.executable).parent / "host"), "test", "specs"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert re.fullmatch(r"\d+ passed, 0 failed", done.stdout.splitlines()[-1])
