"""``host tools`` and ``host plan`` show an act's lock: its names, and how long a call waits."""

from __future__ import annotations

import json

import pytest

from host.cli import main
from support.paths import ROOT

SPECS = str(ROOT / "specs")


def test_tools_shows_the_lock(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["tools", "--specs", SPECS]) == 0
    text = capsys.readouterr().out
    shown = text[text.index("rollback_deploy  ") :]
    assert "  acts: deploys:rollback_deploy  (" in shown
    assert "    one at a time per service, environment; waits up to 10s for the lock\n" in shown
    assert main(["tools", "--specs", SPECS, "--format", "json"]) == 0
    by_name = {t["name"]: t for t in json.loads(capsys.readouterr().out)}
    assert by_name["rollback_deploy"]["lock"] == {
        "names": ["service", "environment"],
        "wait": "10s",
        "wait_s": 10.0,
    }
    assert "lock" not in by_name["close_ticket"]


def test_plan_shows_the_lock_the_act_would_hold(capsys: pytest.CaptureFixture[str]) -> None:
    args = ["plan", "rollback_deploy", "--specs", SPECS, "--arg", "service=api"]
    args += ["--arg", "environment=staging"]
    assert main(args) == 0
    text = capsys.readouterr().out
    assert "  act deploys:rollback_deploy(service, environment, reason) would run last" in text
    assert (
        '    holding the lock on service="api", environment="staging" (waiting up to 10s; busy '
        "if another call holds it)\n"
    ) in text
    assert main([*args, "--format", "json"]) == 0
    act = json.loads(capsys.readouterr().out)["act"]
    assert act["lock"] == {"names": ["service", "environment"], "wait_s": 10.0}
    assert act["run"] is False
