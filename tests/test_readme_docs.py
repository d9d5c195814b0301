"""The README's own words kept honest: the curl session pastes and runs, its links lead somewhere.

The curl session runs exactly as written (with the port of a real ``host serve``) through
``bash``, ``curl`` and ``jq``; ``.ci/run`` installs them on a clean machine.
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


def section(title: str) -> str:
    start = README.index(f"\n## {title}\n")
    end = README.find("\n## ", start + 1)
    return README[start : end if end >= 0 else len(README)]


@pytest.mark.skipif(not (shutil.which("curl") and shutil.which("jq")), reason="needs curl and jq")
def test_the_curl_session_runs_as_pasted(tmp_path: Path) -> None:
    blocks = re.findall(r"```sh\n(.*?)```", section("A session with curl"), re.S)
    assert len(blocks) == 2 and "jq -r .result.requestState" in blocks[1]
    with host_serve(tmp_path, "desk", HELPDESK_DB=str(tmp_path / "helpdesk.db")) as server:
        script = "set -euo pipefail\n" + "\n".join(blocks)
        script = script.replace("127.0.0.1:8000", f"127.0.0.1:{server.port}")
        done = subprocess.run(
            ["bash", "-c", script], capture_output=True, text=True, timeout=60,
            env=clean_env(), cwd=tmp_path,
        )  # fmt: skip
    assert done.returncode == 0, done.stderr
    first, _, last = done.stdout.rpartition("\n{")
    asked = json.loads(first)
    assert asked["result"]["resultType"] == "input_required"
    closed = json.loads("{" + last)
    assert closed["result"]["structuredContent"] == {"id": "T-1", "closed": True}


def test_links_inside_the_readme_lead_to_a_heading() -> None:
    anchors: dict[str, int] = {}
    for heading in re.findall(r"^#{1,6} (.+)$", README, re.M):
        slug = re.sub(r"[^\w\- ]", "", heading.lower()).replace(" ", "-")
        count = anchors.get(slug)
        anchors[slug] = 0 if count is None else count + 1
        if count is not None:
            anchors[f"{slug}-{count + 1}"] = 0
    for target in re.findall(r"\]\(#([^)]+)\)", README):
        assert target in anchors, target
    for target in re.findall(r"\]\((?!https?:|#)([^)#]+)", README):
        assert (ROOT / target).exists(), target


def test_the_commands_table_lists_every_command() -> None:
    from host.cli import COMMANDS

    rows = re.findall(r"^\| `host (\w+)[^`]*` \|", section("Commands"), re.M)
    assert rows == COMMANDS


def test_the_plan_example_is_what_host_plan_prints(tmp_path: Path) -> None:
    shown = re.search(r"```\n\$ host plan close_ticket --arg id=T-1\n(.*?)```", README, re.S)
    assert shown is not None
    done = subprocess.run(
        [sys.executable, "-m", "host", "plan", "close_ticket", "--arg", "id=T-1"],
        capture_output=True, text=True, timeout=60, cwd=ROOT,
        env=clean_env(HOST_DATA_DIR=str(tmp_path), HELPDESK_DB=str(tmp_path / "desk.db")),
    )  # fmt: skip
    assert done.stdout == shown[1]
