"""Read-only tools: no act, a ``result:`` (or the last read), no claim, audited as ``read``."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from host.cli import main
from host.machine import CallContext, NeedInput, Outcome, given
from host.machine.compile import compile_tool
from host.spec.check import check_project
from host.spec.model import Confirm, Read, Tool
from host.testing import McpClient
from support.paths import ROOT

YES = {"action": "accept", "content": {"confirm": True}}

HANDLERS = """
def status(service):
    return {"service": service, "up": service != "db", "replicas": 3}

def version(service):
    return "1.4.2"
"""


def no_claim(act: Any) -> Outcome:
    raise AssertionError("a read-only tool claimed an act")


@pytest.fixture
def handlers(tmp_path: Path) -> Path:
    directory = tmp_path / "handlers"
    directory.mkdir()
    (directory / "ops.py").write_text(HANDLERS)
    return directory


def tool(*steps: Any, result: Any = None) -> Tool:
    schema = {"properties": {"service": {"type": "string"}}, "required": ["service"]}
    return Tool(name="status", description="d", input=schema, steps=steps, result=result)


def test_the_result_template_is_rendered_and_nothing_is_claimed(handlers: Path) -> None:
    machine = compile_tool(
        tool(
            Read("state", "ops:status"),
            Read("running", "ops:version"),
            result={"up": "{{ state.up }}", "text": "{{ service }} runs {{ running }}"},
        ),
        handlers,
    )
    outcome = machine.run({"service": "web"}, given({}), CallContext(tool="status", once=no_claim))
    assert isinstance(outcome, Outcome) and not outcome.acted and not outcome.is_error
    assert outcome.structured == {"up": True, "text": "web runs 1.4.2"}
    assert machine.read_only


def test_without_a_result_the_last_read_is_the_result(handlers: Path) -> None:
    machine = compile_tool(
        tool(Read("running", "ops:version"), Read("state", "ops:status")), handlers
    )
    outcome = machine.run({"service": "db"}, given({}), CallContext(tool="status", once=no_claim))
    assert isinstance(outcome, Outcome)
    assert outcome.structured == {"service": "db", "up": False, "replicas": 3}


def test_a_read_only_tool_may_still_ask_first(handlers: Path) -> None:
    machine = compile_tool(
        tool(Confirm("sure", "Show {{ service }}?"), Read("state", "ops:status")), handlers
    )
    context = CallContext(tool="status", once=no_claim)
    asked = machine.run({"service": "web"}, given({}), context)
    assert isinstance(asked, NeedInput) and [q.key for q in asked.questions] == ["sure"]
    done = machine.run({"service": "web"}, given({"sure": YES}), context)
    assert isinstance(done, Outcome) and done.structured["up"] is True
    declined = machine.run({"service": "web"}, given({"sure": {"action": "decline"}}), context)
    assert isinstance(declined, Outcome) and declined.ending == "declined"


def test_the_example_is_listed_read_only_and_audited_as_read(mcp: McpClient) -> None:
    listed = {t["name"]: t for t in mcp.tools.list()}
    assert listed["service_status"]["annotations"] == {"readOnlyHint": True}

    result = mcp.tools.call("service_status", {})
    assert result.json() == {"open": 4, "closed": 0, "unassigned": 3, "emails_sent": 0}
    mcp.tools.call("close_ticket", {"id": "T-2"}, answers={"close": YES})
    after = mcp.tools.call("service_status", {}).json()
    assert after == {"open": 3, "closed": 1, "unassigned": 2, "emails_sent": 1}

    record = mcp.audit.records(tool="service_status")[0]
    assert record.outcome == "read" and record.acted is False


def test_a_written_read_only_hint_is_kept(tmp_path: Path, handlers: Path) -> None:
    specs = tmp_path / "specs"
    specs.mkdir()
    (specs / "t.yaml").write_text(
        "kind: tool\nname: peek\ndescription: d\nannotations: {readOnlyHint: false}\n"
        "input: {properties: {service: {type: string}}, required: [service]}\n"
        "steps:\n  - read: state\n    call: ops:status\n"
    )
    result = check_project([specs], handlers)
    assert result.project is not None and result.diagnostics == []
    assert result.project.tools[0].annotations == {"readOnlyHint": False}


@pytest.mark.parametrize(
    ("steps", "extra", "words"),
    [
        ("steps: []\n", "", "has no act step and nothing to return"),
        (
            "steps:\n  - act: ops:status\n",
            "annotations: {destructiveHint: false}\nresult: {a: 1}\n",
            "which only a read-only tool has",
        ),
    ],
)
def test_a_tool_needs_an_act_or_something_to_return(
    tmp_path: Path, handlers: Path, steps: str, extra: str, words: str
) -> None:
    specs = tmp_path / "specs"
    specs.mkdir()
    (specs / "t.yaml").write_text(
        "kind: tool\nname: peek\ndescription: d\n"
        "input: {properties: {service: {type: string}}, required: [service]}\n" + extra + steps
    )
    [problem] = check_project([specs], handlers).diagnostics
    assert problem.rule == "act-count" and words in problem.message


def test_the_result_may_use_only_names_in_scope(tmp_path: Path, handlers: Path) -> None:
    specs = tmp_path / "specs"
    specs.mkdir()
    (specs / "t.yaml").write_text(
        "kind: tool\nname: peek\ndescription: d\n"
        "input: {properties: {service: {type: string}}, required: [service]}\n"
        "steps:\n  - read: state\n    call: ops:status\n"
        "result: {up: '{{ stat.up }}'}\n"
    )
    [problem] = check_project([specs], handlers).diagnostics
    assert problem.rule == "template-name" and "Did you mean 'state'?" in problem.message
    assert (problem.pos.line, problem.pos.column) == (8, 18)


def test_plan_and_tools_say_it_only_reads(capsys: pytest.CaptureFixture[str]) -> None:
    specs = str(ROOT / "specs")
    assert main(["plan", "service_status", "--specs", specs, "--format", "json"]) == 0
    planned = json.loads(capsys.readouterr().out)
    assert planned["read_only"] is True and planned["act"] is None
    assert planned["ends"]["structuredContent"]["open"] == 4

    assert main(["plan", "service_status", "--specs", specs]) == 0
    assert 'returns (read-only: no act): {"open": 4' in capsys.readouterr().out

    assert main(["tools", "--specs", specs]) == 0
    text = capsys.readouterr().out
    assert "service_status  Help-desk status  [read-only]" in text
    assert "  acts: nothing (read-only); returns its result:" in text


def test_the_schema_knows_result() -> None:
    schema = json.loads((ROOT / "host" / "spec" / "schema.json").read_text())
    assert "result" in schema["definitions"]["tool"]["properties"]
