"""The validator on ``lock:``: each message's text, and the model it builds."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from host.cli import main
from host.spec import load_project
from host.spec.model import Act
from support.paths import ROOT

BROKEN = ROOT / "tests" / "fixtures" / "broken"


def messages(capsys: pytest.CaptureFixture[str], name: str) -> list[tuple[int, str, str]]:
    main(["validate", str(BROKEN / name), "--format", "json"])
    found = json.loads(capsys.readouterr().out)
    return [(d["line"], d["rule"], d["message"]) for d in found]


def test_lock_wait_and_busy_need_a_lock(capsys: pytest.CaptureFixture[str]) -> None:
    assert messages(capsys, "lock.yaml") == [
        (
            line,
            "lock",
            f"{key}: needs a lock: on the act fx:restart, and it has none, so there is nothing to "
            "wait for; add lock: [names] (the names whose values say which resource it changes, "
            f"like lock: [service, environment]), or remove {key}:",
        )
        for line, key in ((15, "lock_wait"), (16, "busy"))
    ]


def test_lock_wait_is_a_duration_of_at_most_5m(capsys: pytest.CaptureFixture[str]) -> None:
    assert messages(capsys, "duration--lock-wait.yaml") == [
        (
            16,
            "duration",
            "'1h' is longer than the longest allowed, 5m: a call waits for a lock at most 5m (it "
            "holds its request open meanwhile); write 5m or less",
        ),
        (
            30,
            "duration",
            "'lock_wait': 0 has no unit: write 0s (not waiting at all)",
        ),
        (
            46,
            "duration",
            "'lock_wait': 120 has no unit: write 120s (2m); 120m and 120h and 120d would be over "
            "the most allowed here, 5m",
        ),
    ]  # NOTE: lock_wait: 0s (the default written out) is no problem


def test_lock_names_must_be_in_scope_and_defined(capsys: pytest.CaptureFixture[str]) -> None:
    assert messages(capsys, "template-name--lock.yaml") == [
        (
            15,
            "template-name",
            "'envirnment' is not defined here; names in scope: caller, environment, service. "
            "Did you mean 'environment'?",
        ),
        (
            16,
            "template-name",
            "'servce' is not defined here; names in scope: caller, environment, service. "
            "Did you mean 'service'?",
        ),
    ]
    optional = messages(capsys, "template-optional--lock.yaml")
    assert (
        15,
        "template-optional",
        "'environment' may be undefined here (an optional input), and a lock's key needs the "
        "value of each of its names; leave it out of lock:, make the input required, or ask for "
        "it under `when: environment is undefined`",
    ) in optional


def test_busy_must_fit_the_output_schema(capsys: pytest.CaptureFixture[str]) -> None:
    assert messages(capsys, "result-output--busy.yaml") == [
        (
            20,
            "result-output",
            "the act fx:restart has a lock: but no busy: result, and 'restart' declares output:, "
            "so a call that does not get the lock would end with the host's default text, which "
            "carries no structured content; clients reject such a result: add busy: with a "
            "mapping that fits output (like {restarted: false, reason: ...})",
        ),
        (
            39,
            "result-output",
            "this busy result is a text, which carries no structured content, but 'restart_text' "
            "declares output: and clients reject a result without it; write a mapping that fits "
            "output",
        ),
        (
            58,
            "result-output",
            "this busy result does not fit the tool's output schema: 'no' is not of type "
            "'boolean'; clients reject a result that does not fit: change the result or the schema",
        ),
    ]


def test_a_lock_that_leaves_inputs_out_is_not_warned_about(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # NOTE: a lock is about the resource, not the call: leaving out `force` is exactly right.
    specs = tmp_path / "specs"
    specs.mkdir()
    (specs / "server.yaml").write_text("kind: server\nname: s\nversion: 1.0.0\n")
    (specs / "restart.yaml").write_text(
        "kind: tool\nname: restart\ndescription: Restart a service.\n"
        "annotations: {destructiveHint: false}\n"
        "input:\n  properties:\n    service: {type: string}\n    environment: {type: string}\n"
        "    force: {type: boolean, default: false}\n  required: [service, environment]\n"
        "steps:\n  - act: ops:restart\n    lock: [service, environment]\n"
    )
    handlers = tmp_path / "handlers"
    handlers.mkdir()
    (handlers / "ops.py").write_text("def restart(service, environment, force=False):\n    pass\n")
    assert main(["validate", str(specs), "--strict", "--format", "json"]) == 0
    assert json.loads(capsys.readouterr().out) == []


def test_the_model_of_the_example_lock() -> None:
    tool = load_project(ROOT / "specs").tool("rollback_deploy")
    assert tool is not None
    act = tool.act
    assert isinstance(act, Act) and act.lock == ("service", "environment")
    assert act.lock_wait_s == 10.0
    assert act.busy["rolled_back"] is False
