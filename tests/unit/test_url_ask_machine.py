"""The URL ask as the machine runs it, with a fake ``ctx.url_asks``: no store, no pages."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from host.machine import CallContext, NeedInput, Outcome, Question, given
from host.machine.compile import compile_tool
from host.machine.definition import definition_digest
from host.machine.pages import PageAsk, Ticket
from host.machine.plan import plan_call
from host.spec.model import Act, Ask, FormField, Tool

HANDLERS = """
def rotate(service, api_key):
    return {"service": service, "length": len(api_key)}
"""


@dataclass
class FakePages:
    values: Mapping[str, Any] | None = None
    opened: list[PageAsk] = field(default_factory=list)
    waits: list[float] = field(default_factory=list)

    def open(self, ask: PageAsk) -> Ticket:
        self.opened.append(ask)
        return Ticket("ask_1", "https://h.example/asks/ask_1", "eli_1")

    def submitted(self, ticket: Ticket, wait_s: float) -> Mapping[str, Any] | None:
        self.waits.append(wait_s)
        return self.values


@pytest.fixture
def handlers(tmp_path: Path) -> Path:
    (tmp_path / "h.py").write_text(HANDLERS)
    return tmp_path


def _tool(when: str | None = None, extra: tuple[Any, ...] = ()) -> Tool:
    return Tool(
        name="rotate_key",
        description="d",
        input={"properties": {"service": {"type": "string"}}, "required": ["service"]},
        steps=(
            *extra,
            Ask(
                "credentials",
                "New key for {{ service }}",
                (FormField("api_key", {"type": "string"}, secret=True),),
                when=when,
                declined={"rotated": False},
                mode="url",
                wait_s=7.0,
            ),
            Act("h:rotate"),
        ),
    )


def run(handlers: Path, pages: FakePages, answers: dict[str, Any], tool: Tool | None = None) -> Any:
    machine = compile_tool(tool or _tool(), handlers)
    return machine.run({"service": "api"}, given(answers), CallContext(url_asks=pages))


def test_the_question_is_the_page_url_and_carries_no_form(handlers: Path) -> None:
    pages = FakePages()
    asked = run(handlers, pages, {})
    assert isinstance(asked, NeedInput)
    (question,) = asked.questions
    assert question.params() == {
        "mode": "url",
        "message": "New key for api",
        "url": "https://h.example/asks/ask_1",
    }
    assert question.on_page and question.handle == "eli_1"
    assert pages.opened[0].secrets == frozenset({"api_key"})
    assert pages.waits == [0.0]  # a first round never waits


def test_accepted_and_submitted_the_values_reach_the_handler(handlers: Path) -> None:
    pages = FakePages({"api_key": "0123456789"})
    done = run(handlers, pages, {"credentials": {"action": "accept"}})
    assert isinstance(done, Outcome) and done.structured == {"service": "api", "length": 10}
    assert pages.waits == [7.0]


def test_accepted_but_not_submitted_asks_again_after_waiting(handlers: Path) -> None:
    pages = FakePages()
    asked = run(handlers, pages, {"credentials": {"action": "accept"}})
    assert isinstance(asked, NeedInput) and asked.questions[0].key == "credentials"
    assert pages.waits == [7.0]


def test_submitted_before_being_asked_goes_on_at_once(handlers: Path) -> None:
    pages = FakePages({"api_key": "abc"})
    done = run(handlers, pages, {})
    assert isinstance(done, Outcome) and done.structured == {"service": "api", "length": 3}


def test_decline_ends_with_the_steps_result_and_waits_for_nothing(handlers: Path) -> None:
    pages = FakePages({"api_key": "abc"})
    done = run(handlers, pages, {"credentials": {"action": "decline"}})
    assert isinstance(done, Outcome) and done.structured == {"rotated": False}
    assert done.ending == "declined" and pages.waits == []


def test_when_false_skips_the_page(handlers: Path) -> None:
    pages = FakePages()
    tool = _tool(when="service == 'other'")
    machine = compile_tool(tool, handlers)
    done = machine.run({"service": "api"}, given({}), CallContext(url_asks=pages))
    assert isinstance(done, Outcome) and done.is_error  # api_key was never given
    assert pages.opened == []


def test_a_round_with_other_questions_does_not_wait_for_the_page(handlers: Path) -> None:
    pages = FakePages()
    tool = _tool(extra=(Ask("why", "Why?", (FormField("reason", {"type": "string"}),)),))
    asked = run(handlers, pages, {"credentials": {"action": "accept"}}, tool)
    assert isinstance(asked, NeedInput)
    assert [q.key for q in asked.questions] == ["why", "credentials"]
    assert pages.waits == [0.0]


def test_every_field_of_a_url_ask_is_redacted(handlers: Path) -> None:
    assert "api_key" in compile_tool(_tool(), handlers).audit_redact


def test_the_url_is_part_of_what_an_answer_answers() -> None:
    one = Question("k", "m", {}, "https://h/asks/a", "e")
    other = Question("k", "m", {}, "https://h/asks/b", "e")
    assert one.digest() != other.digest()
    assert (
        Question("k", "m", {"type": "object"}).digest()
        == Question("k", "m", {"type": "object"}).digest()
    )


def test_a_tool_without_url_asks_keeps_its_definition_digest() -> None:
    form = Ask("a", "m", (FormField("x", {"type": "string"}),))
    tool = Tool("t", "d", {"type": "object"}, (form, Act("h:f")))
    url = Tool("t", "d", {"type": "object"}, (Ask("a", "m", form.fields, mode="url"), Act("h:f")))
    assert definition_digest(tool) != definition_digest(url)
    # NOTE: the digest of a form ask is what it was before asks had a mode (pinned).
    assert definition_digest(tool) == definition_digest(
        Tool("t", "d", {"type": "object"}, (Ask("a", "m", form.fields, wait_s=30.0), Act("h:f")))
    )


def test_a_plan_consents_then_assumes_the_page_submitted(handlers: Path) -> None:
    machine = compile_tool(_tool(), handlers)
    plan = plan_call(machine, {"service": "api"}, CallContext())
    assert [len(r.questions) for r in plan.rounds] == [1, 0]
    assert plan.acts
