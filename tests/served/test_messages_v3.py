"""The messages of issue 24: what, where, and the fix that works, each asserted word for word."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from host.cli import main
from host.machine.keys import names_key, template_key
from host.spec.check import check_project
from host.spec.diagnostics import Diagnostic
from support.paths import ROOT

pytestmark = pytest.mark.served

APPROVALS = ROOT / "tests" / "fixtures" / "approvals" / "specs"

SERVER = "kind: server\nelicitation: {enabled: true}\n"
HANDLER = "def restart(service, environment='staging', force=False):\n    return {'ok': service}\n"
RESTART = """\
kind: tool
name: restart
description: Restart a service.
annotations: {destructiveHint: false}
input:
  properties:
    service: {type: string}
STEPS
"""


def diagnostics(tmp_path: Path, *documents: str, auth: bool | None = None) -> list[Diagnostic]:
    specs, handlers = tmp_path / "specs", tmp_path / "handlers"
    specs.mkdir(exist_ok=True)
    handlers.mkdir(exist_ok=True)
    (handlers / "ops.py").write_text(HANDLER)
    (specs / "t.yaml").write_text("---\n".join(documents))
    return check_project([specs], handlers, auth=auth).diagnostics


def tool(steps: str, *, input_extra: str = "") -> str:
    return RESTART.replace("STEPS", input_extra + steps)


def test_a_bare_number_of_seconds_suggests_only_units_that_fit(tmp_path: Path) -> None:
    steps = (
        "  required: [service]\nsteps:\n  - confirm: sure\n    message: Restart {{ service }}?\n"
        "    remember: {for: 3600}\n  - act: ops:restart\n"
    )
    [problem] = diagnostics(tmp_path, SERVER, tool(steps))
    assert problem.rule == "duration"
    assert problem.message == (
        "'for': 3600 has no unit: write 3600s (1h) or 3600m (2.5d); 3600h and 3600d would be "
        "over the most allowed here, 30d"
    )


def test_unprotected_scopes_are_one_warning_naming_every_place(tmp_path: Path) -> None:
    steps = "  required: [service]\nscopes: [ops:write]\nsteps:\n  - act: ops:restart\n"
    second = tool(steps).replace("name: restart", "name: rollback")
    found = diagnostics(tmp_path, SERVER + "scopes: [ops]\n", tool(steps), second, auth=False)
    [warning] = [d for d in found if d.rule == "scopes-unprotected"]
    file = tmp_path / "specs" / "t.yaml"
    assert (warning.pos.line, warning.pos.column) == (3, 1)
    assert warning.message == (
        f"scopes (here and at {file}:13:1, {file}:26:1) protect nothing without auth settings: "
        "set HOST_AUTH_ISSUER and HOST_AUTH_AUDIENCE, or HOST_AUTH_TOKENS, where the host runs; "
        "host serve refuses to start without them"
    )


def test_one_misindented_property_is_one_error(tmp_path: Path) -> None:
    steps = (
        "  environment: {type: string}\n  required: [service, environment]\n"
        "steps:\n  - confirm: sure\n    message: Restart {{ service }} in {{ environment }}?\n"
        "    remember: {for: 8h, key: [service, environment]}\n"
        "  - act: ops:restart\n"
        "examples:\n  - name: e\n    arguments: {service: web, environment: prod}\n"
        "    answers: {sure: {action: accept, content: {confirm: true}}}\n"
    )
    [problem] = diagnostics(tmp_path, SERVER, tool(steps))
    assert problem.rule == "json-schema" and problem.pos.line == 11
    assert problem.message == (
        "'environment' is not a JSON Schema keyword, so it would be ignored; if 'environment' "
        "is a property, indent it under properties:"
    )


def test_an_act_before_its_confirm_reports_the_order_alone(tmp_path: Path) -> None:
    steps = "  required: [service]\nsteps:\n  - act: ops:restart_sure\n  - confirm: sure\n"
    steps += "    message: Restart?\n"
    (tmp_path / "handlers").mkdir()
    (tmp_path / "handlers" / "ops.py").write_text(
        HANDLER + "\ndef restart_sure(service, sure):\n    return {}\n"
    )
    specs = tmp_path / "specs"
    specs.mkdir()
    (specs / "t.yaml").write_text(SERVER + "---\n" + tool(steps))
    [problem] = check_project([specs], tmp_path / "handlers").diagnostics
    assert problem.rule == "order" and problem.message == (
        "the confirm step 'sure' comes after the act (line 13): questions must come before side "
        "effects; move it above the act"
    )


def test_a_key_that_leaves_out_an_input_the_act_receives_is_named(tmp_path: Path) -> None:
    steps = (
        "    environment: {type: string}\n    force: {type: boolean, default: false}\n"
        "  required: [service, environment]\n"
        "steps:\n  - confirm: sure\n    message: Restart {{ service }} in {{ environment }}?\n"
        '    remember: {for: 8h, key: "{{ service }}/{{ environment }}"}\n'
        "  - act: ops:restart\n"
    )
    [problem] = diagnostics(tmp_path, SERVER, tool(steps))
    assert (problem.rule, problem.severity) == ("remember-key", "warning")
    assert problem.message == (
        "remember.key leaves out 'force', which the act ops:restart receives: a remembered yes "
        "also approves calls that differ only in 'force'; add it to the key (key: [environment, "
        "force, service]), or remove key: to use the default key, a digest of every argument"
    )
    listed = steps.replace('"{{ service }}/{{ environment }}"', "[service, environment, force]")
    assert diagnostics(tmp_path, SERVER, tool(listed)) == []


def test_keys_of_several_values_never_collide() -> None:
    listed, written = names_key(["a", "b"]), template_key("{{ a }}/{{ b }}")
    for key in (listed, written):
        assert key({"a": "web", "b": "prod"}) == "web/prod"
        assert key({"a": "a/b", "b": "c"}) != key({"a": "a", "b": "b/c"})
        assert key({"a": "50%", "b": "x"}) != key({"a": "50%25", "b": "x"})
    assert written({"a": "a/b", "b": "c"}) == "a%2Fb/c"
    run_together = template_key("{{ a }}{{ b }}")
    assert run_together({"a": "ab", "b": "c"}) == '["ab", "c"]'
    assert run_together({"a": "ab", "b": "c"}) != run_together({"a": "a", "b": "bc"})
    assert names_key(["n", "flag"])({"n": 3, "flag": True}) == "3/true"


def test_token_create_makes_a_missing_directory_private(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "etc" / "host" / "tokens"
    monkeypatch.setenv("HOST_AUTH_TOKENS", str(path))
    assert main(["token", "revoke", "ops"]) == 1
    assert capsys.readouterr().err == (
        f"host token: there is no tokens file {path}: its directory {path.parent} does not "
        "exist; host token create makes both\n"
    )
    assert main(["token", "create", "ops", "--scopes", "ops"]) == 0
    err = capsys.readouterr().err
    assert err.startswith(f"Created the directory {path.parent} (mode 0700) for the tokens file.")
    assert stat.S_IMODE(path.parent.stat().st_mode) == 0o700 and path.is_file()


def test_host_call_says_a_remembered_yes_skipped_the_confirm(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("HOST_")}
    env["HOST_DATA_DIR"] = str(tmp_path)
    command = [sys.executable, "-m", "host", "call", "restart_service", "--specs", str(APPROVALS)]
    command += ["--arg", "service=api"]
    first = subprocess.run(command, input="y\n", capture_output=True, text=True, env=env)
    again = subprocess.run(command, input="", capture_output=True, text=True, env=env)
    assert first.returncode == again.returncode == 0, first.stderr + again.stderr
    assert "was not asked" not in first.stderr
    assert json.loads(again.stdout)["remembered"] is True
    assert "host call: the confirm 'restart' was not asked: a yes given before is remembered" in (
        again.stderr
    )
    assert "host approvals remembered shows it, host approvals revoke ID asks again" in again.stderr


def test_host_tools_shows_the_remember_policy(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["tools", "--specs", str(APPROVALS)]) == 0
    text = capsys.readouterr().out
    assert "    remembers a yes for 8h, per {{ service }}/{{ environment }}" in text
    assert main(["tools", "--specs", str(APPROVALS), "--format", "json"]) == 0
    tools = {t["name"]: t for t in json.loads(capsys.readouterr().out)}
    [restart] = tools["restart_service"]["questions"]
    assert restart["remember"] == {"for": "8h", "key": "{{ service }}/{{ environment }}"}


def test_a_key_of_names_remembers_a_yes_for_those_values_only(tmp_path: Path) -> None:
    from host.testing.harness import serve

    steps = (
        "    environment: {type: string}\n    force: {type: boolean, default: false}\n"
        "  required: [service, environment]\n"
        "steps:\n  - confirm: sure\n    message: Restart {{ service }} in {{ environment }}?\n"
        "    remember: {for: 8h, key: [service, environment, force]}\n"
        "  - act: ops:restart\n"
    )
    diagnostics(tmp_path, SERVER, tool(steps))
    yes = {"sure": {"action": "accept", "content": {"confirm": True}}}
    with serve(tmp_path / "specs", tmp_path / "handlers", data_dir=tmp_path / "data") as mcp:
        web_prod = {"service": "web", "environment": "prod"}
        assert mcp.tools.call("restart", web_prod, answers=yes).asked == ["sure"]
        assert mcp.tools.call("restart", web_prod).asked == []
        forced = mcp.tools.call("restart", {**web_prod, "force": True}, answers=yes)
        assert forced.asked == ["sure"]
        slashed = {"service": "web/prod", "environment": ""}
        assert mcp.tools.call("restart", slashed, answers=yes).asked == ["sure"]
        keys = sorted(a.key for a in mcp.approvals.list())
    assert keys == ["web%2Fprod//false", "web/prod/false", "web/prod/true"]


def test_a_keyword_indented_like_its_empty_property_is_one_error(tmp_path: Path) -> None:
    steps = (
        "    environment:\n    type: string\n  required: [service, environment]\n"
        "steps:\n  - act: ops:restart\n"
    )
    [problem] = diagnostics(tmp_path, SERVER, tool(steps))
    assert (problem.rule, problem.pos.line, problem.pos.column) == ("json-schema", 11, 17)
    assert problem.message == (
        "input.properties.environment is empty, and type: on the line below is indented like "
        "it, so it reads as another property: indent type: two more spaces, under environment:"
    )
