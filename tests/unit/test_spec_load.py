"""Loading specs: positions of every key and value, duplicates, syntax errors, the typed model."""

from __future__ import annotations

import contextlib
from pathlib import Path
from typing import Any

import pytest

from host.errors import SpecError
from host.spec import check_project, load_project
from host.spec.model import Act, Ask, Confirm, Pos, Read, Server, Timeouts
from host.spec.yaml import load_text
from support.paths import ROOT

GOOD = ROOT / "tests" / "fixtures" / "good"

SOURCE = """\
# a comment first
kind: tool
name: t
steps:
  - read: ticket
    call: "h:get"
  - act: h:do
---
---
kind: server
elicitation: {enabled: yes}
"""


def test_every_key_and_value_has_its_position() -> None:
    docs, problems = load_text(SOURCE, "x.yaml")
    assert problems == []
    assert [d.index for d in docs] == [0, 2]  # the empty document is skipped
    locs = docs[0].locs
    assert locs.value(()) == Pos("x.yaml", 2, 1)
    assert locs.key(("name",)) == Pos("x.yaml", 3, 1)
    assert locs.value(("name",)) == Pos("x.yaml", 3, 7)
    assert locs.value(("steps", 0)) == Pos("x.yaml", 5, 5)
    assert locs.key(("steps", 0, "call")) == Pos("x.yaml", 6, 5)
    assert locs.value(("steps", 0, "call")) == Pos("x.yaml", 6, 11)
    # An unknown path falls back to its nearest written ancestor.
    assert locs.value(("steps", 0, "nope")) == Pos("x.yaml", 5, 5)
    assert docs[0].data["steps"][0] == {"read": "ticket", "call": "h:get"}


def test_yaml_1_2_scalars() -> None:
    text = "a: yes\nb: 1.0.0\nc: 010\nd: 0x1F\ne: ~\nf: 1.5\ng: true\nh: 2024-01-01\n"
    docs, problems = load_text(text, "x.yaml")
    assert problems == []
    assert docs[0].data == {
        "a": "yes",
        "b": "1.0.0",
        "c": 10,
        "d": 31,
        "e": None,
        "f": 1.5,
        "g": True,
        "h": "2024-01-01",
    }


def test_duplicate_key_is_reported_at_the_duplicate_naming_the_first() -> None:
    docs, problems = load_text("kind: tool\nname: a\nsteps: []\nname: b\n", "x.yaml")
    assert [(p.rule, p.pos.line, p.pos.column) for p in problems] == [("duplicate-key", 4, 1)]
    assert "first defined at line 2" in problems[0].message
    assert docs[0].data["name"] == "a"


def test_a_syntax_error_keeps_the_documents_before_it() -> None:
    docs, problems = load_text("kind: server\n---\nkind: tool\nname: [x\n", "x.yaml")
    assert [d.data for d in docs] == [{"kind": "server"}]
    # Reported where the '[' that never closes was opened, not where the parser gave up.
    assert [(p.rule, p.pos.line) for p in problems] == [("yaml-syntax", 4)]
    assert "is not closed" in problems[0].message


def test_merge_keys_and_anchors() -> None:
    text = "base: &b {type: string, title: T}\nfield: {<<: *b, title: Own}\n"
    docs, problems = load_text(text, "x.yaml")
    assert problems == []
    assert docs[0].data["field"] == {"type": "string", "title": "Own"}


NODE_CASES = [
    (
        "a: &x {b: 1}\nc: {<<: [*x, 5], d: 2}\n",
        {"a": {"b": 1}, "c": {"b": 1, "d": 2}},
        [("wrong-type", 2, 14)],
    ),
    (
        "a: !!str 5\nb: !!int '7'\nc: !!float 1\nd: !!null ''\ne: !!bool yes\n",
        {"a": "5", "b": 7, "c": 1.0, "d": None, "e": False},
        [],
    ),
    ("x: &a [1, *a]\n", {"x": [1, None]}, [("yaml-syntax", 1, 4)]),
    ("!!merge a: {b: 1}\nc: 2\n", {"b": 1, "c": 2}, []),
    (
        "m: {a: hello, world, b: 2}\n",
        {"m": {"a": "hello", "world": None, "b": 2}},
        [("yaml-syntax", 1, 15)],
    ),
]


@pytest.mark.parametrize("pure", [False, True])
@pytest.mark.parametrize(("text", "data", "problems"), NODE_CASES, ids=range(len(NODE_CASES)))
def test_tags_merges_and_aliases_as_written(
    text: str, data: Any, problems: list[tuple[str, int, int]], pure: bool
) -> None:
    """Explicit tags, merges (also by an explicit !!merge), a self-referring alias, a lost value."""
    docs, found = load_text(text, "x.yaml", pure=pure)
    assert [d.data for d in docs] == [data]
    assert [(p.rule, p.pos.line, p.pos.column) for p in found] == problems


def test_custom_tags_are_refused() -> None:
    _, problems = load_text("a: !secret x\n", "x.yaml")
    assert [(p.rule, p.pos.line, p.pos.column) for p in problems] == [("yaml-syntax", 1, 4)]


def test_load_project_builds_the_typed_model() -> None:
    project = load_project(ROOT / "specs")
    assert [t.name for t in project.tools] == [
        "assign_ticket",
        "close_ticket",
        "delete_ticket",
        "list_outbox",
        "rollback_deploy",
        "service_status",
    ]
    assert project.server.name == "help-desk"
    assert project.server.elicitation_enabled is True
    assert project.handlers_dir == ROOT / "handlers"
    assert project.specs_dir == ROOT / "specs"
    close = project.tool("close_ticket")
    assert close is not None
    assert close.pos == Pos(str(ROOT / "specs" / "tickets.yaml"), 3, 1)
    read, confirm, act = close.steps
    assert isinstance(read, Read) and read.call == "helpdesk:get_ticket"
    assert read.missing == "There's no ticket {{ id }}."
    assert isinstance(confirm, Confirm) and confirm.label == "Tick to close the ticket"
    assert confirm.unticked == {
        "id": "{{ id }}",
        "closed": False,
        "reason": "The user didn't tick the box.",
    }
    assert isinstance(act, Act) and close.act == act
    assert act.pos.line == 22
    assert close.input["type"] == "object"  # implied
    outbox = project.tool("list_outbox")
    assert outbox is not None and outbox.input == {"type": "object"}
    assert outbox.output is not None and outbox.output["required"] == ["emails"]
    assign = project.tool("assign_ticket")
    assert assign is not None
    ask = assign.steps[1]
    assert isinstance(ask, Ask) and ask.when == "agent is undefined"
    (field,) = ask.fields
    assert (field.name, field.required) == ("agent", True)
    assert field.schema == {
        "type": "string",
        "enum": ["Nour", "Sam", "Priya"],
        "description": "Support agent",
    }


def test_good_fixtures_model() -> None:
    project = load_project(GOOD)
    assert project.server == Server(
        "fixtures",
        "2.0",
        "Valid specs that use every feature.",
        True,
        Pos(str(GOOD / "server.yaml"), 2, 1),
        elicitation_switched_off=False,
        fallback_enabled=False,
        scopes=("tickets:read",),
        timeouts=Timeouts(read_s=10.0, act_s=90.0),
    )
    names = [t.name for t in project.tools]
    assert names == sorted(names) and "billing.refund" in names
    refund = project.tool("billing.refund")
    assert refund is not None
    how = refund.steps[1]
    assert isinstance(how, Ask)
    required = {f.name: f.required for f in how.fields}
    assert required == {
        "amount": False,  # it has a default
        "reason": True,
        "tags": False,  # optional: true
        "email": False,
        "size": False,
        "notify": False,
        "labels": False,
    }
    assert refund.scopes == ("billing:refund", "billing:refund:large")
    assert refund.audit_redact == ("id", "email")
    read, sure, act = refund.steps[0], refund.steps[3], refund.steps[4]
    assert isinstance(read, Read) and read.timeout_s == 0.5
    assert isinstance(act, Act) and act.timeout_s == 120.0
    assert isinstance(sure, Confirm) and sure.remember is not None
    assert (sure.remember.for_s, sure.remember.key) == (8 * 3600.0, "{{ reason }}/{{ amount }}")
    assert project.tool("assign").steps[0].timeout_s is None  # type: ignore[union-attr]
    tags = next(f for f in how.fields if f.name == "tags")
    assert "optional" not in tags.schema
    assert refund.output == {"type": "object", "properties": {"refunded": {"type": "number"}}}
    assign = project.tool("assign")
    assert assign is not None
    first, second = assign.examples
    assert first.name == "asks when no agent is given"
    assert first.arguments == {"id": "T-1"} and first.expect == {"asks": ["pick"]}
    assert second.answers == {"pick": {"action": "accept", "content": {"agent": "Sam"}}}


def test_a_directory_without_server_gets_the_defaults(tmp_path: Path) -> None:
    specs = tmp_path / "specs"
    specs.mkdir()
    (specs / "t.yaml").write_text(
        "kind: tool\nname: t\ndescription: d\nannotations: {readOnlyHint: true}\n"
        "steps:\n  - act: h:f\n"
    )
    (tmp_path / "handlers").mkdir()
    (tmp_path / "handlers" / "h.py").write_text("def f():\n    return None\n")
    project = load_project(specs)
    assert project.server == Server()
    assert project.handlers_dir == tmp_path / "handlers"


def test_load_project_raises_spec_error_with_every_diagnostic() -> None:
    with pytest.raises(SpecError) as caught:
        load_project(ROOT / "tests" / "fixtures" / "broken" / "order.yaml")
    found = [(d.rule, d.pos.line) for d in caught.value.diagnostics]
    assert found == [("order", 14), ("order", 16)]
    assert "2 problems" in str(caught.value)


def test_check_project_gives_no_project_on_errors() -> None:
    result = check_project([ROOT / "tests" / "fixtures" / "broken" / "unknown-kind.yaml"])
    assert result.project is None
    assert [d.rule for d in result.errors] == ["unknown-kind"]


SPEC_FILES = sorted(
    p
    for root in (ROOT / "specs", ROOT / "tests" / "fixtures", ROOT / "conformance" / "specs")
    for p in root.rglob("*.yaml")
)


@pytest.mark.parametrize("path", SPEC_FILES, ids=lambda p: str(p.relative_to(ROOT)))
def test_the_c_and_pure_python_parsers_agree(path: Path) -> None:
    """Every spec and fixture means the same whichever YAML parser is installed."""
    try:
        text = path.read_bytes().decode("utf-8")
    except UnicodeDecodeError:
        pytest.skip("not UTF-8: refused before any parser runs")
    fast, fast_problems = load_text(text, str(path))
    pure, pure_problems = load_text(text, str(path), pure=True)
    assert fast_problems == pure_problems
    assert [d.data for d in fast] == [d.data for d in pure]
    assert [d.locs.table for d in fast] == [d.locs.table for d in pure]


def test_yaml_1_2_that_the_c_parser_refuses_is_read_as_the_pure_parser_reads_it() -> None:
    """libyaml rejects a ':' inside a flow sequence; YAML 1.2 (and the pure parser) allow it."""
    from ruamel.yaml import YAML
    from ruamel.yaml.error import YAMLError

    text = "kind: server\nscopes: [tickets:read, billing:refund]\n"
    # The C parser refuses it (when it is installed): the case the fallback exists for.
    with contextlib.suppress(YAMLError):
        list(YAML(typ="safe", pure=False).compose_all(text))
    docs, problems = load_text(text, "x.yaml")
    assert problems == []
    assert docs[0].data["scopes"] == ["tickets:read", "billing:refund"]
    assert docs[0].locs.value(("scopes", 1)) == Pos("x.yaml", 2, 24)


VERSIONED = [
    "a: yes\nb: 0o7\nc: 010\nd: ~\ne: 1_000\nf: .inf\ng: 2001-12-14\nh: ''\n",
    "%YAML 1.1\n---\na: yes\nb: 0o7\nc: 010\n---\nd: on\ne: 1_000\n",
    "%YAML 1.2\n---\na: yes\n---\nb: [no, 0x1F, -.5]\n",
    "a: yes\n...\n%YAML 1.1\n---\nb: yes\n",
]


@pytest.mark.parametrize("pure", [False, True])
@pytest.mark.parametrize("text", VERSIONED)
def test_scalars_resolve_as_ruamel_itself_resolves_them(text: str, pure: bool) -> None:
    """Our resolver (one that raises nothing per scalar) tags every scalar as ruamel's own does."""
    from ruamel.yaml import YAML

    from host.spec.yaml.load import _compose_all

    def tags(node: Any) -> Any:
        if isinstance(node.value, list):
            return [
                tags(v)
                for pair in node.value
                for v in (pair if isinstance(pair, tuple) else [pair])
            ]
        return (node.value, str(node.tag))

    ours = [tags(root) for root in _compose_all(text, pure=pure)]
    theirs = [tags(root) for root in YAML(typ="safe", pure=pure).compose_all(text)]
    assert ours == theirs


def test_positions_count_characters_not_bytes() -> None:
    docs, _ = load_text("title: café ünïcode\nname: x\n", "x.yaml")
    locs = docs[0].locs
    assert locs.value(("name",)) == Pos("x.yaml", 2, 7)
    assert locs.word(("title",), "ünïcode") == Pos("x.yaml", 1, 13)
