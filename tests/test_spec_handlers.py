"""Handlers found by parsing (never importing unless asked), and names in scope per step."""

from __future__ import annotations

from pathlib import Path

import pytest

from host.spec import check_project
from host.spec.build import build_tool
from host.spec.handlers import HandlerIndex, HandlerProblem, Param
from host.spec.load import load_text
from host.spec.rules_forms import asks_for_secret
from host.spec.scope import fills, scopes

FX = Path(__file__).parent / "fixtures" / "handlers"


def test_functions_found_by_parsing() -> None:
    index = HandlerIndex(FX)
    close = index.resolve("fx:close")
    assert close.file == FX / "fx.py" and close.line == 12
    assert close.params == (
        Param("id", "normal", False),
        Param("ticket", "normal", False),
        Param("ctx", "normal", False),
    )
    fetch = index.resolve("fx:fetch")
    assert fetch.params == (
        Param("id", "normal", False),
        Param("limit", "keyword_only", True),
        Param("extra", "var_keyword", True),
    )
    assert index.resolve("fx:shout").params == (Param("text", "normal", False),)
    assert index.resolve("fx:Caller").params is None  # a class: signature unknown statically
    assert index.resolve("fx:positional").params == (Param("id", "positional_only", False),)
    assert index.resolve("billing.refunds:issue").file == FX / "billing" / "refunds.py"


def test_missing_and_broken_handlers() -> None:
    index = HandlerIndex(FX)
    with pytest.raises(HandlerProblem, match="Did you mean 'close'"):
        index.resolve("fx:clos")
    with pytest.raises(HandlerProblem, match="no handler module 'nope'"):
        index.resolve("nope:f")
    with pytest.raises(HandlerProblem) as caught:
        index.resolve("bad_syntax:fine")
    assert caught.value.rule == "handler-syntax"
    assert caught.value.pos is not None and caught.value.pos.line == 5
    with pytest.raises(HandlerProblem, match="does not exist"):
        HandlerIndex(FX / "nowhere").resolve("fx:close")


def test_parsing_runs_no_handler_code_importing_does(tmp_path: Path) -> None:
    marker = tmp_path / "imported"
    (tmp_path / "side_effect_mod.py").write_text(
        f"open({str(marker)!r}, 'w').close()\n\ndef run(id, /, note=1):\n    return id\n"
    )
    parsed = HandlerIndex(tmp_path).resolve("side_effect_mod:run")
    assert not marker.exists()
    assert parsed.params == (Param("id", "positional_only", False), Param("note", "normal", True))
    imported = HandlerIndex(tmp_path, import_modules=True).resolve("side_effect_mod:run")
    assert marker.exists()
    assert imported.params == parsed.params


SCOPED = """\
kind: tool
name: t
description: d
input:
  properties:
    id: {type: string}
    agent: {type: string}
    extra: {type: string}
  required: [id]
steps:
  - read: ticket
    call: h:get
  - ask: pick
    when: agent is undefined
    message: Who?
    form:
      agent: {type: string}
      note: {type: string}
  - ask: more
    message: More?
    form:
      size: {type: integer, default: 1}
      comment: {type: string, optional: true}
  - act: h:do
"""


def test_names_in_scope_and_whether_they_are_sure_to_be_defined() -> None:
    docs, _ = load_text(SCOPED, "x.yaml")
    doc = build_tool(docs[0])
    at = scopes(doc.tool, doc.locs)
    first = {n: v.definite for n, v in at.at(0).items()}
    assert first == {"id": True, "agent": False, "extra": False}
    last = {n: v.definite for n, v in at.at(3).items()}
    assert last == {
        "id": True,
        "agent": True,  # filled under `when: agent is undefined`
        "extra": False,
        "ticket": True,
        "pick": False,  # asked only under a when
        "note": False,  # a field of a question asked only under a when
        "more": True,
        "size": True,  # has a default
        "comment": False,  # optional
    }
    assert fills("agent is undefined") == "agent"
    assert fills(" agent is not defined ") == "agent"
    assert fills("agent is undefined and x") is None


def test_a_guarded_fill_makes_a_required_parameter_fine(tmp_path: Path) -> None:
    (tmp_path / "specs").mkdir()
    (tmp_path / "handlers").mkdir()
    (tmp_path / "handlers" / "h.py").write_text(
        "def get(id):\n    return {}\n\ndef do(id, agent, size, ticket, ctx):\n    return {}\n"
    )
    hints = "annotations: {destructiveHint: false}\n"
    spec = SCOPED.replace("  required: [id]\n", "  required: [id]\n" + hints)
    (tmp_path / "specs" / "t.yaml").write_text(
        "kind: server\nelicitation: {enabled: true}\n---\n" + spec
    )
    result = check_project([tmp_path / "specs"])
    assert [d.rule for d in result.diagnostics] == []


@pytest.mark.parametrize(
    ("texts", "found"),
    [
        (("password",), "password"),
        (("apiKey",), "api key"),
        (("key", "Your API key"), "api key"),
        (("card_number",), "card number"),
        (("x", None, "Paste your access token"), "token"),
        (("max_tokens",), None),
        (("agent", "Support agent"), None),
        (("passage",), None),
    ],
)
def test_secret_detection(texts: tuple[str | None, ...], found: str | None) -> None:
    assert asks_for_secret(*texts) == found
