"""The pytest plugin, seen from a project that uses it: inner test runs through ``pytester``.

Each test writes a small spec directory and test files into a fresh project, runs pytest on it,
and checks what a spec author would see: passes where the tool behaves, and failures that show
the question, the differing keys or the spec problem where it does not.
"""

from __future__ import annotations

import pytest

pytest_plugins = ["pytester"]

SPECS = """\
kind: server
name: kit-test
version: 0.0.1
elicitation: {enabled: true}
---
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
    declined: {id: "{{ id }}", closed: false}
  - act: h:close
"""

HANDLERS = """\
import json
import os
from pathlib import Path


def _file():
    return Path(os.environ["HOST_DATA_DIR"]) / "closed.json"


def get(id):
    return {"id": id} if id.startswith("T-") else None


def close(id, ctx):
    path = _file()
    closed = json.loads(path.read_text()) if path.exists() else []
    closed.append(id)
    path.write_text(json.dumps(closed))
    return {
        "id": id,
        "closed": True,
        "count": len(closed),
        "data_dir": str(ctx.data_dir),
        "extra": os.environ.get("KIT_EXTRA"),
    }
"""

EXAMPLES = """
examples:
  - name: closes on yes
    arguments: {id: T-1}
    answers: {sure: {action: accept, content: {confirm: true}}}
    expect: {result: {closed: true}, asks: [sure]}
  - name: says no
    arguments: {id: T-2}
    answers: {sure: {action: decline}}
    expect: {result: {id: T-2, closed: true}}
"""


def project(pytester: pytest.Pytester, specs: str = SPECS, *, folder: str = "specs") -> None:
    """A project with a spec directory and its handlers beside it."""
    pytester.mkdir(folder)
    (pytester.path / folder / "tools.yaml").write_text(specs)
    pytester.mkdir("handlers")
    (pytester.path / "handlers" / "h.py").write_text(HANDLERS)


def run(pytester: pytest.Pytester, *args: str) -> pytest.RunResult:
    return pytester.runpytest("-p", "no:cacheprovider", "-p", "no:randomly", *args)


def test_mcp_serves_the_spec_directory_and_answers_questions(pytester: pytest.Pytester) -> None:
    project(pytester)
    pytester.makepyfile(
        test_close="""
        def test_yes(mcp):
            mcp.on_elicitation({"action": "accept", "content": {"confirm": True}})
            result = mcp.tools.call("close", {"id": "T-1"})
            assert result.json()["closed"] is True
            assert result.rounds == 2
            assert [q.key for q in mcp.questions] == ["sure"]

        def test_tools(mcp):
            assert mcp.tools.list().names == ["close"]
        """
    )
    run(pytester).assert_outcomes(passed=2)


def test_a_question_without_an_answer_fails_showing_the_question(
    pytester: pytest.Pytester,
) -> None:
    project(pytester)
    pytester.makepyfile(
        test_close="""
        def test_forgot_to_answer(mcp):
            mcp.tools.call("close", {"id": "T-1"})
        """
    )
    result = run(pytester)
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        [
            "*close asked a question and this test gives no answer for it:*",
            "*sure (round 1): Close T-1?*",
            '*form: {"properties": {"confirm": {*"type": "boolean"}}*',
            "*Answer it with mcp.on_elicitation(...)*",
        ]
    )


def test_a_wrong_expectation_fails_with_the_differing_keys(pytester: pytest.Pytester) -> None:
    project(pytester)
    pytester.makepyfile(
        test_close="""
        from host.testing import like

        def test_like(mcp):
            mcp.on_elicitation("decline")
            assert mcp.tools.call("close", {"id": "T-1"}).json() == like({"closed": True})

        def test_equal(mcp):
            mcp.on_elicitation("decline")
            assert mcp.tools.call("close", {"id": "T-1"}).json() == {"id": "T-1", "closed": True}

        def test_tools(mcp):
            assert "sendElicitationResult" in mcp.tools.list()

        def test_error(mcp):
            mcp.tools.call("close", {"id": "X"}).assert_error("INVALID_PARAMS")

        def test_asked(mcp):
            mcp.on_elicitation("cancel")
            mcp.tools.call("close", {"id": "T-1"}).assert_asked("other")
        """
    )
    result = run(pytester)
    result.assert_outcomes(failed=5)
    output = result.stdout.str()
    for shown in [
        "closed: expected true, got false",
        "{'closed': False} != {'closed': True}",
        "assert 'sendElicitationResult' in ToolList(['close'])",
        'expected close({"id": "X"}) to fail with JSON-RPC error -32602, but it returned '
        'a tool error after 1 round(s): "There\'s no ticket X."',
        """expected close({"id": "T-1"}) to ask ['other'], it asked ['sure']""",
    ]:
        assert shown in output


def test_every_test_gets_a_fresh_data_directory(pytester: pytest.Pytester) -> None:
    project(pytester)
    pytester.makeini("[pytest]\nhost_env =\n    KIT_EXTRA={data_dir}/extra.db\n")
    pytester.makepyfile(
        test_close="""
        import os
        import pytest

        @pytest.mark.parametrize("n", range(3))
        def test_count_starts_again(mcp, host_data_dir, n):
            mcp.on_elicitation({"action": "accept", "content": {"confirm": True}})
            result = mcp.tools.call("close", {"id": "T-1"}).json()
            assert result["count"] == 1
            assert result["data_dir"] == str(host_data_dir)
            assert os.environ["HOST_DATA_DIR"] == str(host_data_dir)
            assert result["extra"] == f"{host_data_dir}/extra.db"
            assert (host_data_dir / "closed.json").is_file()
        """
    )
    run(pytester).assert_outcomes(passed=3)


def test_the_spec_directory_comes_from_ini_option_or_fixture(pytester: pytest.Pytester) -> None:
    project(pytester, folder="tools")
    pytester.makepyfile(
        test_where="""
        def test_serves(mcp):
            assert mcp.tools.list().names == ["close"]
        """
    )
    run(pytester).assert_outcomes(errors=1)
    run(pytester, "--host-specs=tools").assert_outcomes(passed=1)
    pytester.makeini("[pytest]\nhost_specs = tools\n")
    run(pytester).assert_outcomes(passed=1)
    (pytester.path / "tox.ini").unlink()
    pytester.makeconftest(
        """
        import pytest

        @pytest.fixture
        def host_specs(pytestconfig):
            return pytestconfig.rootpath / "tools"
        """
    )
    run(pytester).assert_outcomes(passed=1)


def test_specs_with_errors_fail_the_test_with_the_diagnostics(pytester: pytest.Pytester) -> None:
    project(pytester, SPECS.replace("call: h:get", "call: h:nope"))
    pytester.makepyfile(
        test_close="""
        def test_anything(mcp):
            pass
        """
    )
    result = run(pytester, "test_close.py")
    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines(["*cannot be served*", "*tools.yaml:15:*no function 'nope'*"])
    assert "Traceback" not in result.stdout.str()


def test_spec_examples_are_collected_as_tests(pytester: pytest.Pytester) -> None:
    project(pytester, SPECS + EXAMPLES)
    result = run(pytester, "specs", "-v")
    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines(
        [
            "*specs/tools.yaml::close[[]closes on yes[]] PASSED*",
            "*specs/tools.yaml::close[[]says no[]] FAILED*",
        ]
    )
    result.stdout.fnmatch_lines(
        [
            "*example close > says no (*tools.yaml:*) failed:*",
            "*result.closed: expected true, got false*",
            "*--- expected*",
            "*+++ actual*",
            '*-  "closed": true*',
            '*+  "closed": false*',
        ]
    )
    assert "Traceback" not in result.stdout.str()


def test_spec_examples_run_with_the_rest_when_specs_are_in_testpaths(
    pytester: pytest.Pytester,
) -> None:
    project(pytester, SPECS + EXAMPLES.replace("closed: true}}\n", "closed: false}}\n"))
    pytester.makepyfile(test_plain="def test_plain(): pass")
    pytester.makeini("[pytest]\ntestpaths = test_plain.py specs\n")
    run(pytester).assert_outcomes(passed=3)
    pytester.makeini("[pytest]\ntestpaths = test_plain.py specs\nhost_examples = false\n")
    run(pytester).assert_outcomes(passed=1)


def test_an_example_whose_question_has_no_answer_shows_it(pytester: pytest.Pytester) -> None:
    examples = """
examples:
  - name: forgot
    arguments: {id: T-1}
    expect: {result: {closed: true}}
  - name: wrong error
    arguments: {id: X}
    expect: {error: -32602}
"""
    project(pytester, SPECS + examples)
    result = run(pytester, "specs")
    result.assert_outcomes(failed=2)
    result.stdout.fnmatch_lines(
        [
            "*close asked 'sure', which the answers do not cover (they answer nothing):*",
            "*sure (round 1): Close T-1?*",
            "*error: expected JSON-RPC error -32602, but it returned a tool error: "
            '"There\'s no ticket X."*',
        ]
    )


def test_a_spec_file_with_errors_is_a_collection_error(pytester: pytest.Pytester) -> None:
    # NOTE: a second act is an error (a tool without one is a read-only tool, not an error).
    project(
        pytester,
        SPECS.replace("  - act: h:close\n", "  - act: h:close\n  - act: h:get\n") + EXAMPLES,
    )
    result = run(pytester, "specs")
    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines(["*the specs in*have errors:*", "*tools.yaml:*"])
    assert "Traceback" not in result.stdout.str()
