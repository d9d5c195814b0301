"""The README's tutorial and the manual's commands kept honest: they paste and run as written.

The tutorial runs exactly as written (with the port of a real ``host serve``, and this
environment's ``host``) through ``bash``, ``curl`` and ``jq``; ``.ci/run`` installs them on a clean
machine. The commands table of docs/README.md is ``host``'s own list, and the ``host plan`` example
of docs/testing-specs.md is what ``host plan`` prints.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from support.paths import ROOT
from support.servers import clean_env, host_serve

pytestmark = pytest.mark.served

README = (ROOT / "README.md").read_text()
INDEX = (ROOT / "docs" / "README.md").read_text()
TESTING = (ROOT / "docs" / "testing-specs.md").read_text()


def section(text: str, title: str, level: str = "##") -> str:
    """What ``text`` holds under heading ``title``, up to the next heading of its level or above."""
    start = text.index(f"\n{level} {title}\n")
    ends = [text.find(f"\n{'#' * n} ", start + 1) for n in range(1, len(level) + 1)]
    end = min([e for e in ends if e >= 0], default=len(text))
    return text[start:end]


def sh_blocks(text: str) -> list[str]:
    return re.findall(r"```sh\n(.*?)```", text, re.S)


@pytest.mark.skipif(not (shutil.which("curl") and shutil.which("jq")), reason="needs curl and jq")
def test_the_tutorial_runs_as_pasted(tmp_path: Path) -> None:
    tutorial = section(README, "Five minutes with the help desk")
    curl = sh_blocks(section(tutorial, "A session with curl", "###"))
    assert len(curl) == 2 and "jq -r .result.requestState" in curl[1]
    (listing,) = sh_blocks(section(tutorial, "List the tools", "###"))
    (audit,) = sh_blocks(section(tutorial, "See the audit record", "###"))
    with host_serve(tmp_path, "desk", HELPDESK_DB=str(tmp_path / "helpdesk.db")) as server:
        # A line of its own between the steps, to tell their outputs apart.
        steps = "\necho @@@\n".join([listing, "\n".join(curl) + "\necho", audit])
        script = "set -euo pipefail\n" + steps.replace("127.0.0.1:8000", f"127.0.0.1:{server.port}")
        script = script.replace(".venv/bin/host", str(Path(sys.executable).parent / "host"))
        done = subprocess.run(
            ["bash", "-c", script], capture_output=True, text=True, timeout=120,
            env=clean_env(HOST_DATA_DIR=str(tmp_path / "desk")), cwd=tmp_path,
        )  # fmt: skip
    assert done.returncode == 0, done.stderr
    listed, exchange, trail = done.stdout.split("@@@\n")
    assert re.findall(r"^(\w+)  ", listed, re.M) == [
        "assign_ticket", "close_ticket", "delete_ticket", "list_outbox", "rollback_deploy",
        "service_status",
    ]  # fmt: skip
    first, _, last = exchange.strip().rpartition("\n{")
    asked = json.loads(first)
    assert asked["result"]["resultType"] == "input_required"
    closed = json.loads("{" + last)
    assert closed["result"]["structuredContent"] == {"id": "T-1", "closed": True}
    (record,) = trail.strip().splitlines()
    shown = re.search(r"```\n(\S+  anonymous  close_ticket  acted  )\d+ms(  .*)\n```", section(
        tutorial, "See the audit record", "###"
    ))  # fmt: skip
    assert shown is not None
    assert re.fullmatch(r"\S+  anonymous  close_ticket  acted  \d+ms" + re.escape(shown[2]), record)


def test_the_commands_table_lists_every_command() -> None:
    from host.cli import COMMANDS

    rows = re.findall(r"^\| `host (\w+)[^`]*` \|", section(INDEX, "Commands"), re.M)
    assert rows == COMMANDS


def test_the_plan_example_is_what_host_plan_prints(tmp_path: Path) -> None:
    shown = re.search(r"```\n\$ host plan close_ticket --arg id=T-1\n(.*?)```", TESTING, re.S)
    assert shown is not None
    done = subprocess.run(
        [sys.executable, "-m", "host", "plan", "close_ticket", "--arg", "id=T-1"],
        capture_output=True, text=True, timeout=60, cwd=ROOT,
        env=clean_env(HOST_DATA_DIR=str(tmp_path), HELPDESK_DB=str(tmp_path / "desk.db")),
    )  # fmt: skip
    assert done.stdout == shown[1]
