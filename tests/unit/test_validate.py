"""The validator's rules, broken fixtures for every rule, checked by rule id, line, column and fix.

Each ``tests/fixtures/broken/RULE.yaml`` (and ``RULE--CASE.yaml`` for another class of mistake the
same rule catches) ends with ``# expect: [FILE:]LINE:COL RULE fix: WORDS`` lines: the exact set of
diagnostics checking that file alone must produce (FILE is relative to the fixture), and words of
the fix that the diagnostic's message must contain.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from host.spec.check import check_project
from host.spec.diagnostics import Diagnostic
from host.spec.report import format_diagnostics
from host.spec.rulebook import RULES
from support.paths import FIXTURES, ROOT

BROKEN = sorted((FIXTURES / "broken").glob("*.yaml"))
_EXPECT = re.compile(
    r"^# expect: (?:(?P<file>[^\s:]+):)?(?P<line>\d+):(?P<col>\d+) (?P<rule>[a-z-]+)"
    r"(?: fix: (?P<fix>.+?))?$",
    re.M,
)

Key = tuple[Path, int, int, str]


def expected(path: Path) -> list[Key]:
    text = path.read_bytes().decode("utf-8", "replace")
    return sorted(
        (
            (path.parent / m["file"]).resolve() if m["file"] else path.resolve(),
            int(m["line"]),
            int(m["col"]),
            m["rule"],
        )
        for m in _EXPECT.finditer(text)
    )


def fixes(path: Path) -> list[tuple[int, int, str, str | None]]:
    text = path.read_bytes().decode("utf-8", "replace")
    return [
        (int(m["line"]), int(m["col"]), m["rule"], m["fix"])
        for m in _EXPECT.finditer(text)
        if not m["file"]
    ]


def rule_of(path: Path) -> str:
    return path.stem.split("--")[0]


def keys(diags: list[Diagnostic]) -> list[Key]:
    return sorted((Path(d.pos.file).resolve(), d.pos.line, d.pos.column, d.rule) for d in diags)


def check(path: Path) -> list[Diagnostic]:
    text = path.read_bytes()
    import_handlers = b"# options: import" in text
    auth = False if b"# options: no-auth" in text else None
    return check_project([path], import_handlers=import_handlers, auth=auth).diagnostics


def test_every_rule_has_a_broken_fixture() -> None:
    assert {rule_of(p) for p in BROKEN} == set(RULES)


@pytest.mark.parametrize("path", BROKEN, ids=lambda p: p.stem)
def test_broken_fixture_reports_exactly_its_problems(path: Path) -> None:
    diags = check(path)
    assert keys(diags) == expected(path)
    assert rule_of(path) in {d.rule for d in diags}
    assert all(d.severity == RULES[d.rule].severity for d in diags)
    assert diags == sorted(diags)


@pytest.mark.parametrize("path", BROKEN, ids=lambda p: p.stem)
def test_every_diagnostic_says_how_to_fix_it(path: Path) -> None:
    diags = check(path)
    for line, column, rule, fix in fixes(path):
        assert fix, f"{path.name}:{line}:{column} {rule} has no 'fix:' words"
        messages = [
            d.message
            for d in diags
            if (d.pos.line, d.pos.column, d.rule) == (line, column, rule)
            and Path(d.pos.file).resolve() == path.resolve()
        ]
        assert any(fix.lower() in m.lower() for m in messages), (line, column, fix, messages)


@pytest.mark.parametrize("path", BROKEN, ids=lambda p: p.stem)
def test_three_formats_agree(path: Path) -> None:
    diags = check(path)
    text = format_diagnostics(diags, "text")
    for d in diags:
        where = f"{d.pos.file}:{d.pos.line}:{d.pos.column}" if d.pos.line else d.pos.file
        assert f"{where}: {d.severity}: {d.message} [{d.rule}]\n" in text
    plain = json.loads(format_diagnostics(diags, "json"))
    assert plain == [
        {
            "rule": d.rule,
            "severity": d.severity,
            "file": d.pos.file,
            "line": d.pos.line,
            "column": d.pos.column,
            "message": d.message,
        }
        for d in diags
    ]
    sarif = json.loads(format_diagnostics(diags, "sarif"))
    assert sarif["version"] == "2.1.0"
    run = sarif["runs"][0]
    rules = run["tool"]["driver"]["rules"]
    results = run["results"]
    assert [r["ruleId"] for r in results] == [d.rule for d in diags]
    for result, d in zip(results, diags, strict=True):
        assert rules[result["ruleIndex"]]["id"] == d.rule
        assert result["level"] == d.severity
        assert result["message"]["text"] == d.message
        location = result["locations"][0]["physicalLocation"]
        assert location["artifactLocation"]["uri"] == Path(d.pos.file).as_posix()
        if d.pos.line:
            assert location["region"] == {"startLine": d.pos.line, "startColumn": d.pos.column}


def test_text_shows_the_source_line_and_a_caret() -> None:
    path = FIXTURES / "broken" / "unknown-key.yaml"
    text = format_diagnostics(check(path), "text")
    assert (
        f"{path}:3:1: error: unknown key 'descripton' in a tool; expected one of: annotations, "
        "audit, description, examples, input, kind, name, output, result, scopes, steps, task, "
        "title. Did you "
        "mean 'description'? [unknown-key]\n"
        "  |\n"
        "3 | descripton: A typo in a key.\n"
        "  | ^~~~~~~~~~\n"
    ) in text


def test_template_name_points_at_the_name_inside_the_text() -> None:
    path = FIXTURES / "broken" / "template-name.yaml"
    first = check(path)[0]
    line = path.read_text().splitlines()[first.pos.line - 1]
    assert line[first.pos.column - 1 :].startswith("idd")
    assert "Did you mean 'id'?" in first.message


def test_duplicate_tool_across_files_points_at_both(tmp_path: Path) -> None:
    tool = "kind: tool\nname: same\ndescription: d\nannotations: {readOnlyHint: true}\n"
    (tmp_path / "a.yaml").write_text(tool + "steps:\n  - act: h:f\n")
    (tmp_path / "b.yaml").write_text("# another file\n" + tool + "steps:\n  - act: h:f\n")
    handlers = tmp_path / "handlers"
    handlers.mkdir()
    (handlers / "h.py").write_text("def f():\n    return 1\n")
    result = check_project([tmp_path], handlers)
    assert result.project is None
    found = [(Path(d.pos.file).name, d.pos.line, d.rule) for d in result.diagnostics]
    assert found == [("a.yaml", 2, "duplicate-tool"), ("b.yaml", 3, "duplicate-tool")]
    assert f"{tmp_path / 'b.yaml'}:3:7" in result.diagnostics[0].message
    assert f"{tmp_path / 'a.yaml'}:2:7" in result.diagnostics[1].message


def test_good_fixtures_are_clean() -> None:
    result = check_project([FIXTURES / "good"])
    assert result.diagnostics == []
    assert result.project is not None


def test_help_desk_specs_are_clean() -> None:
    result = check_project([ROOT / "specs"])
    assert result.diagnostics == []
    assert result.project is not None


def test_all_problems_of_a_document_in_one_run() -> None:
    # Schema problems that leave the shape intact do not hide the later rules' problems.
    diags = check(FIXTURES / "broken" / "form-keyword.yaml")
    assert {"form-keyword"} == {d.rule for d in diags}
    assert len(diags) == 7


def test_warnings_alone_still_give_a_project() -> None:
    result = check_project([FIXTURES / "broken" / "no-confirm.yaml"])
    assert [d.rule for d in result.diagnostics] == ["no-confirm"]
    assert result.warnings and not result.errors
    assert result.project is not None


def test_an_optional_input_with_a_default_is_filled_in_for_handlers(tmp_path: Path) -> None:
    """The validator and the machine agree: an input's schema default reaches the handler."""
    from host.machine import CallContext, compile_project

    (tmp_path / "handlers").mkdir()
    (tmp_path / "handlers" / "h.py").write_text("def act(id, limit):\n    return [id, limit]\n")
    specs = tmp_path / "specs"
    specs.mkdir()
    (specs / "t.yaml").write_text(
        "kind: tool\nname: t\ndescription: d\nannotations: {readOnlyHint: true}\n"
        "input:\n  properties:\n    id: {type: string}\n"
        "    limit: {type: integer, default: 10}\n  required: [id]\n"
        "steps:\n  - act: h:act\n"
    )
    result = check_project([specs], tmp_path / "handlers")
    assert result.diagnostics == []
    assert result.project is not None
    machine = compile_project(result.project)["t"]
    outcome = machine.run({"id": "x"}, {}, CallContext())
    assert outcome.structured == {"result": ["x", 10]}  # type: ignore[union-attr]


def test_the_kill_switch_is_a_warning_and_the_specs_still_serve(tmp_path: Path) -> None:
    """`enabled: false` written out: validate warns, and the host serves every tool that can run."""
    from host.testing import serve

    specs = tmp_path / "specs"
    specs.mkdir()
    (specs / "s.yaml").write_text(
        "kind: server\nelicitation: {enabled: false}\n---\n"
        "kind: tool\nname: asks\ndescription: d\nannotations: {destructiveHint: false}\n"
        "steps:\n  - confirm: sure\n    message: Sure?\n  - act: h:f\n---\n"
        "kind: tool\nname: plain\ndescription: d\nannotations: {readOnlyHint: true}\n"
        "steps:\n  - act: h:f\n"
    )
    (tmp_path / "handlers").mkdir()
    (tmp_path / "handlers" / "h.py").write_text("def f():\n    return 'done'\n")
    result = check_project([specs])
    assert [(d.rule, d.severity) for d in result.diagnostics] == [("elicitation-off", "warning")]
    assert result.project is not None and not result.project.server.elicitation_enabled
    assert result.project.server.elicitation_switched_off
    with serve(specs, tmp_path / "handlers", data_dir=tmp_path / "data") as mcp:
        asked = mcp.tools.call("asks", answers={"action": "accept", "content": {"confirm": True}})
        assert asked.error is not None and asked.error.data["type"] == "ELICITATION_DISABLED"
        assert mcp.tools.call("plain").text() == "done"
    # Nothing written at all is still the forgotten line: an error that says where to add it.
    (specs / "s.yaml").write_text((specs / "s.yaml").read_text().replace(
        "elicitation: {enabled: false}\n", "name: quiet\n"
    ))  # fmt: skip
    forgot = check_project([specs])
    assert [d.rule for d in forgot.errors] == ["elicitation-disabled"]
    assert "set `elicitation: {enabled: true}`" in forgot.errors[0].message


def test_templated_texts_in_results_are_judged_by_their_type_only(tmp_path: Path) -> None:
    (tmp_path / "handlers").mkdir()
    (tmp_path / "handlers" / "h.py").write_text("def f(id):\n    return {}\n")
    tool = (
        "kind: server\nelicitation: {enabled: true}\n---\n"
        "kind: tool\nname: t\ndescription: d\nannotations: {destructiveHint: false}\n"
        "input: {properties: {id: {type: string}}, required: [id]}\n"
        "output:\n  properties:\n    status: {type: string, enum: [open, closed]}\n"
        "    n: {type: integer}\n"
        "steps:\n  - confirm: sure\n    message: Sure?\n"
        "    declined: {status: 'open-{{ id }}', n: '{{ id | length }}'}\n"
        "    cancelled: {status: '{{ id }}', n: 2}\n"
        "    unticked: {status: open, n: 'many {{ id }}'}\n"
        "  - act: h:f\n"
    )
    (tmp_path / "t.yaml").write_text(tool)
    found = check_project([tmp_path / "t.yaml"], tmp_path / "handlers").diagnostics
    # Only the text where a number belongs is certain to be wrong; the rest depends on rendering.
    assert [(d.rule, d.pos.line) for d in found] == [("result-output", 18)]
    assert "is not of type 'integer'" in found[0].message


def test_a_check_leaves_the_garbage_collectors_settings_as_it_found_them(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The check lets the collector run less often while it works, and only then."""
    import gc

    import host.spec.check as check_module

    seen: list[tuple[int, ...]] = []
    real = check_module.check_shape

    def spying(doc: object) -> object:
        seen.append(gc.get_threshold())
        return real(doc)  # type: ignore[arg-type]

    monkeypatch.setattr(check_module, "check_shape", spying)
    before = gc.get_threshold()
    try:
        gc.set_threshold(700, 10, 10)
        check_project([ROOT / "specs"])
        assert gc.get_threshold() == (700, 10, 10)
        assert seen and all(t == (10_000, 10, 10) for t in seen)
        seen.clear()
        gc.set_threshold(0, 10, 10)  # collection switched off stays off
        check_project([ROOT / "specs"])
        assert gc.get_threshold() == (0, 10, 10)
        assert seen and all(t[0] == 0 for t in seen)
    finally:
        gc.set_threshold(*before)
