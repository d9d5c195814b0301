"""Handlers found by parsing (never importing unless asked), and names in scope per step."""

from __future__ import annotations

from pathlib import Path

import pytest

from host.spec import check_project
from host.spec.build import build_tool
from host.spec.handlers import HandlerIndex, HandlerProblem, Param
from host.spec.rules.forms import asks_for_secret
from host.spec.scope import fills, scopes
from host.spec.yaml import load_text
from support.paths import FIXTURES

FX = FIXTURES / "handlers"


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
    assert fetch.params == (Param("id", "normal", False), Param("limit", "keyword_only", True))
    assert not fetch.is_async
    assert index.resolve("fx:fetch_async").is_async
    assert index.resolve("fx:star_kwargs").params == (
        Param("id", "normal", False),
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
        (("code", "One-time code"), "one time code"),
        (("twoFactorCode",), "two factor"),
        (("x", "Your 2FA code"), "2 fa"),
        (("pin",), "pin"),
        (("x", "Card PIN"), "pin"),
        (("session_cookie",), "session cookie"),
        (("codes", "Recovery codes"), "recovery codes"),
        (("config", "Paste your kubeconfig"), "kubeconfig"),
        (("key", None, "The private key contents"), "private key"),
        (("x", None, "The code from your authenticator app"), "authenticator"),
        (("zip", "ZIP code"), None),
        (("country_code",), None),
        (("promo", "Promo code"), None),
        (("pinned", "Pinned note"), None),
        (("issue_key", "Jira issue key"), None),
        (("bypass_reason",), None),
    ],
)
def test_secret_detection(texts: tuple[str | None, ...], found: str | None) -> None:
    assert asks_for_secret(*texts) == found


def test_a_handler_file_with_a_byte_order_mark_is_accepted(tmp_path: Path) -> None:
    """Python imports a module saved with a UTF-8 BOM; so must the validator and the machine."""
    from host.machine import CallContext, compile_project

    handlers = tmp_path / "handlers"
    handlers.mkdir()
    (handlers / "bom.py").write_bytes(b"\xef\xbb\xbfdef hello(name):\n    return 'hi ' + name\n")
    specs = tmp_path / "specs"
    specs.mkdir()
    (specs / "t.yaml").write_bytes(
        b"\xef\xbb\xbfkind: tool\nname: hello\ndescription: d\n"
        b"annotations: {readOnlyHint: true}\n"
        b"input: {properties: {name: {type: string}}, required: [name]}\n"
        b"steps:\n  - act: bom:hello\n"
    )
    result = check_project([specs], handlers)
    assert result.diagnostics == []
    assert result.project is not None
    machine = compile_project(result.project)["hello"]
    outcome = machine.run({"name": "Ana"}, {}, CallContext())
    assert outcome.content == [{"type": "text", "text": "hi Ana"}]  # type: ignore[union-attr]


def test_imported_signatures_catch_what_parsing_cannot_see(tmp_path: Path) -> None:
    """--import reads real signatures: an async function made by a decorator is still async."""
    (tmp_path / "wrapped.py").write_text(
        "import functools\n\n"
        "def keep(f):\n    @functools.wraps(f)\n    async def inner(id):\n"
        "        return await f(id)\n    return inner\n\n"
        "@keep\nasync def fetch(id):\n    return id\n\n"
        "def plain(id):\n    return id\n\n"
        "late = keep(plain)\n"
    )
    index = HandlerIndex(tmp_path, import_modules=True)
    assert index.resolve("wrapped:fetch").is_async
    assert index.resolve("wrapped:late").is_async
    assert not HandlerIndex(tmp_path).resolve("wrapped:late").is_async  # parsing cannot tell


@pytest.mark.parametrize(
    ("function", "words"),
    [
        ("fetch_async", "is an async def"),
        ("star_args", "takes *ids, which would always be empty"),
        ("star_kwargs", "takes **extra, which would always be empty"),
        ("positional", "has the positional-only parameter 'id'"),
    ],
)
def test_the_machine_refuses_what_the_validator_refuses(function: str, words: str) -> None:
    """A project built in code, never validated, still cannot load such a handler."""
    from host.machine.bind import HandlerImportError, load_handler
    from host.spec.handlers import signature_problem

    ref = f"fx:{function}"
    handler = HandlerIndex(FX).resolve(ref)
    said = signature_problem(ref, handler.params, is_async=handler.is_async)
    assert said is not None and words in said
    with pytest.raises(HandlerImportError) as caught:
        load_handler(FX, ref)
    assert caught.value.message == said
