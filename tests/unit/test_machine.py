"""The machine on its own: rounds, batching, endings, answer checks and the act's guard."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from host.errors import HandlerImportError
from host.machine import AnswerMismatch, CallContext, NeedInput, Outcome, compile_project, given
from host.machine.compile import compile_tool
from host.spec.model import Act, Ask, Confirm, FormField, Project, Read, Server, Tool
from support.paths import ROOT

HANDLERS = """
from host import ToolError

CALLS = []

def lookup(id):
    CALLS.append(("lookup", id))
    return {"T-1": {"title": "Cannot log in"}}.get(id)

def agents():
    return [{"name": "Nour"}, {"name": "Sam"}]

def act(id, ctx, agent="nobody", note=None):
    CALLS.append(("act", id, agent, note, ctx.tool))
    return {"id": id, "agent": agent}

def fail(id):
    raise ToolError(f"cannot do {id}")

def crash(id):
    raise RuntimeError("secret detail")
"""


@pytest.fixture
def handlers(tmp_path: Path) -> Path:
    directory = tmp_path / "handlers"
    directory.mkdir()
    (directory / "h.py").write_text(HANDLERS)
    return directory


def tool(*steps: Any, name: str = "t", input: dict[str, Any] | None = None) -> Tool:
    schema = input or {"properties": {"id": {"type": "string"}}, "required": ["id"]}
    return Tool(name=name, description="d", input=schema, steps=steps)


def ctx(**kw: Any) -> CallContext:
    return CallContext(tool="t", **kw)


def test_confirm_asks_then_acts_once_on_tick(handlers: Path) -> None:
    machine = compile_tool(
        tool(
            Read("ticket", "h:lookup", missing="There's no ticket {{ id }}."),
            Confirm("close", 'Close {{ id }} ("{{ ticket.title }}")?', label="Tick"),
            Act("h:act"),
        ),
        handlers,
    )
    first = machine.run({"id": "T-1"}, given({}), ctx())
    assert isinstance(first, NeedInput)
    (question,) = first.questions
    assert question.key == "close"
    assert question.message == 'Close T-1 ("Cannot log in")?'
    assert question.schema == {
        "type": "object",
        "properties": {"confirm": {"type": "boolean", "description": "Tick"}},
        "required": ["confirm"],
    }
    done = machine.run(
        {"id": "T-1"}, given({"close": {"action": "accept", "content": {"confirm": True}}}), ctx()
    )
    assert isinstance(done, Outcome) and done.acted
    assert done.structured == {"id": "T-1", "agent": "nobody"}


@pytest.mark.parametrize(
    ("answer", "text"),
    [
        ({"action": "decline"}, "declined"),
        ({"action": "cancel"}, "dismissed"),
        ({"action": "accept", "content": {"confirm": False}}, "did not tick"),
    ],
)
def test_confirm_endings_never_act(handlers: Path, answer: dict[str, Any], text: str) -> None:
    machine = compile_tool(tool(Confirm("c", "Sure?"), Act("h:act")), handlers)
    done = machine.run({"id": "X"}, given({"c": answer}), ctx())
    assert isinstance(done, Outcome) and not done.acted and not done.is_error
    assert text in done.content[0]["text"]


def test_declared_ending_keeps_types(handlers: Path) -> None:
    machine = compile_tool(
        tool(Confirm("c", "Sure?", declined={"id": "{{ id }}", "closed": False}), Act("h:act")),
        handlers,
    )
    done = machine.run({"id": "X"}, given({"c": {"action": "decline"}}), ctx())
    assert isinstance(done, Outcome)
    assert done.structured == {"id": "X", "closed": False}


def test_missing_read_is_a_tool_error(handlers: Path) -> None:
    machine = compile_tool(
        tool(Read("ticket", "h:lookup", missing="There's no ticket {{ id }}."), Act("h:act")),
        handlers,
    )
    done = machine.run({"id": "T-9"}, given({}), ctx())
    assert isinstance(done, Outcome) and done.is_error
    assert done.content == [{"type": "text", "text": "There's no ticket T-9."}]


def test_when_skips_question_and_answer_fills_input(handlers: Path) -> None:
    ask = Ask(
        "pick",
        "Who?",
        (FormField("agent", {"type": "string", "enum": ["Nour", "Sam"]}),),
        when="agent is undefined",
    )
    schema = {
        "properties": {"id": {"type": "string"}, "agent": {"type": "string"}},
        "required": ["id"],
    }
    machine = compile_tool(tool(ask, Act("h:act"), input=schema), handlers)
    direct = machine.run({"id": "A", "agent": "Sam"}, given({}), ctx())
    assert isinstance(direct, Outcome) and direct.structured == {"id": "A", "agent": "Sam"}
    asked = machine.run({"id": "A"}, given({}), ctx())
    assert isinstance(asked, NeedInput) and asked.questions[0].key == "pick"
    done = machine.run(
        {"id": "A"}, given({"pick": {"action": "accept", "content": {"agent": "Nour"}}}), ctx()
    )
    assert isinstance(done, Outcome) and done.structured == {"id": "A", "agent": "Nour"}


def test_malformed_answer_raises_with_fields(handlers: Path) -> None:
    machine = compile_tool(tool(Confirm("c", "Sure?"), Act("h:act")), handlers)
    with pytest.raises(AnswerMismatch) as caught:
        machine.run(
            {"id": "X"}, given({"c": {"action": "accept", "content": {"confirm": "yes"}}}), ctx()
        )
    assert caught.value.key == "c"
    assert caught.value.errors[0]["field"] == "confirm"
    with pytest.raises(AnswerMismatch) as missing:
        machine.run({"id": "X"}, given({"c": {"action": "accept", "content": {}}}), ctx())
    assert missing.value.errors[0]["field"] == "confirm"


def test_independent_questions_share_a_round_dependent_ones_wait(handlers: Path) -> None:
    first = Ask("first", "One?", (FormField("agent", {"type": "string"}),))
    second = Ask("second", "Two?", (FormField("note", {"type": "string"}),))
    third = Ask("third", "For {{ agent }}?", (FormField("ok", {"type": "boolean"}),))
    machine = compile_tool(tool(first, second, third, Act("h:act")), handlers)
    round1 = machine.run({"id": "X"}, given({}), ctx())
    assert isinstance(round1, NeedInput)
    assert [q.key for q in round1.questions] == ["first", "second"]
    answers = {
        "first": {"action": "accept", "content": {"agent": "Sam"}},
        "second": {"action": "accept", "content": {"note": "hi"}},
    }
    round2 = machine.run({"id": "X"}, given(answers), ctx())
    assert isinstance(round2, NeedInput)
    assert [(q.key, q.message) for q in round2.questions] == [("third", "For Sam?")]
    answers["third"] = {"action": "accept", "content": {"ok": True}}
    done = machine.run({"id": "X"}, given(answers), ctx())
    assert isinstance(done, Outcome) and done.structured == {"id": "X", "agent": "Sam"}


def test_options_from_a_read(handlers: Path) -> None:
    ask = Ask(
        "pick",
        "Who?",
        (
            FormField(
                "agent", {"type": "string", "enum": "{{ team | map(attribute='name') | list }}"}
            ),
        ),
    )
    machine = compile_tool(tool(Read("team", "h:agents"), ask, Act("h:act")), handlers)
    asked = machine.run({"id": "X"}, given({}), ctx())
    assert isinstance(asked, NeedInput)
    assert asked.questions[0].schema["properties"]["agent"]["enum"] == ["Nour", "Sam"]
    with pytest.raises(AnswerMismatch):
        machine.run(
            {"id": "X"}, given({"pick": {"action": "accept", "content": {"agent": "Eve"}}}), ctx()
        )


def test_tool_error_and_incident(handlers: Path, caplog: pytest.LogCaptureFixture) -> None:
    failing = compile_tool(tool(Act("h:fail")), handlers).run({"id": "Q"}, given({}), ctx())
    assert isinstance(failing, Outcome) and failing.is_error
    assert failing.content[0]["text"] == "cannot do Q"
    crashed = compile_tool(tool(Act("h:crash")), handlers).run({"id": "Q"}, given({}), ctx())
    assert isinstance(crashed, Outcome) and crashed.is_error and crashed.incident
    assert "secret detail" not in crashed.content[0]["text"]
    assert crashed.incident in crashed.content[0]["text"]
    assert any("secret detail" in (r.exc_text or "") for r in caplog.records)


def test_once_guards_the_act(handlers: Path) -> None:
    recorded: list[Outcome] = []

    def once(act: Any) -> Outcome:
        if not recorded:
            recorded.append(act())
        return recorded[0]

    machine = compile_tool(tool(Act("h:act")), handlers)
    a = machine.run({"id": "1"}, given({}), ctx(once=once))
    b = machine.run({"id": "1"}, given({}), ctx(once=once))
    assert a is b


def test_arguments_are_checked(handlers: Path) -> None:
    machine = compile_tool(tool(Act("h:act")), handlers)
    outcome = machine.check_arguments({"id": 3})
    assert outcome is not None and outcome.is_error
    assert "id: 3 is not of type 'string'" in outcome.content[0]["text"]
    assert machine.check_arguments({"id": "3"}) is None


def test_compile_project_of_the_example() -> None:
    root = ROOT
    project = Project(
        Server(),
        (tool(Act("helpdesk:list_outbox"), name="list_outbox"),),
        root / "handlers",
    )
    machines = compile_project(project)
    assert list(machines) == ["list_outbox"]


def test_an_act_result_that_breaks_the_output_schema_is_an_incident(
    handlers: Path, caplog: pytest.LogCaptureFixture
) -> None:
    schema = {"type": "object", "properties": {"agent": {"type": "integer"}}, "required": ["agent"]}
    broken = Tool(
        name="t",
        description="d",
        input={"properties": {"id": {"type": "string"}}, "required": ["id"]},
        steps=(Act("h:act"),),
        output=schema,
    )
    outcome = compile_tool(broken, handlers).run({"id": "1"}, given({}), ctx())
    assert isinstance(outcome, Outcome) and outcome.is_error and outcome.acted
    assert outcome.incident in outcome.content[0]["text"]
    assert "output schema at agent" in caplog.text
    fits = compile_tool(
        Tool(
            name="t",
            description="d",
            input=broken.input,
            steps=(Act("h:act"),),
            output={"type": "object", "required": ["agent"]},
        ),
        handlers,
    ).run({"id": "1"}, given({}), ctx())
    assert isinstance(fits, Outcome) and not fits.is_error


def test_tools_share_each_handler_loaded_once(
    handlers: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A project loads a handler once, however many steps call it; a missing one still fails."""
    import host.machine.compile as compile_module

    loads: list[str] = []
    real = compile_module.load_handler

    def counting(directory: Path, call: str) -> Any:
        loads.append(call)
        return real(directory, call)

    monkeypatch.setattr(compile_module, "load_handler", counting)
    tools = tuple(tool(Read("ticket", "h:lookup"), Act("h:act"), name=f"t{i}") for i in range(3))
    machines = compile_project(Project(Server(), tools, handlers, handlers))
    assert sorted(loads) == ["h:act", "h:lookup"]
    acts = {id(m.act) for m in machines.values()}
    assert len(acts) == 1
    outcome = machines["t2"].run({"id": "T-1"}, given({}), ctx())
    assert isinstance(outcome, Outcome) and not outcome.is_error
    missing = (*tools, tool(Act("h:nope"), name="t9"))
    with pytest.raises(HandlerImportError, match="no function 'nope'"):
        compile_project(Project(Server(), missing, handlers, handlers))


def test_a_static_forms_validator_is_built_on_its_first_answer_and_kept() -> None:
    from host.machine.forms import Form

    form = Form.build((FormField("agent", {"type": "string", "enum": ["Nour", "Sam"]}, True),))
    assert "_static_check" not in vars(form)
    with pytest.raises(AnswerMismatch):
        form.check("pick", form.schema, {"agent": "Priya"})
    built = vars(form)["_static_check"]
    assert form.check("pick", form.schema, {"agent": "Sam"}) == {"agent": "Sam"}
    assert vars(form)["_static_check"] is built


def test_a_questions_digest_is_the_urlsafe_base64_of_its_sha256() -> None:
    """The digest a sealed state carries stays the text it always was (states in flight)."""
    import base64
    import hashlib
    import json

    from host.machine import Question

    for n in range(60):
        question = Question(
            f"q{n}",
            'Close T-1 ("x") ?' * n,
            {"type": "object", "properties": {"f": {"type": "string", "maxLength": n}}},
            url=f"https://host/p/{n}" if n % 2 else "",
        )
        asked: list[Any] = [question.key, question.message, question.schema]
        if question.url:
            asked.append(question.url)
        text = json.dumps(asked, sort_keys=True, ensure_ascii=False)
        raw = hashlib.sha256(text.encode("utf-8")).digest()[:12]
        assert question.digest() == base64.urlsafe_b64encode(raw).decode("ascii")
