"""The ``host call`` sessions docs/testing-specs.md shows are what ``host call`` does.

Each session is run with the answers the page types (the text after a prompt's ``: ``) on stdin;
every line the page shows, less what was typed, comes out, in order: the questions on stderr, the
result on stdout.
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

from support.paths import ROOT
from support.servers import clean_env

pytestmark = pytest.mark.served

PAGE = (ROOT / "docs" / "testing-specs.md").read_text()
PROMPT = re.compile(r"^(.*\[.*): (\S+)$")


def session(command: str) -> list[str]:
    """The lines the page shows under ``$ host call ...``."""
    shown = re.search(rf"```\n\$ {re.escape(command)}\n(.*?)```", PAGE, re.S)
    assert shown is not None, command
    return shown[1].splitlines()


@pytest.mark.parametrize(
    "command",
    ["host call assign_ticket --arg id=T-2", "host call close_ticket --arg id=T-1"],
)
def test_the_session_is_what_host_call_does(command: str, tmp_path: Path) -> None:
    lines = session(command)
    typed = [m[2] for m in map(PROMPT.match, lines) if m]
    assert typed, "the page types an answer"
    done = subprocess.run(
        [sys.executable, "-m", "host", *command.split()[1:]],
        input="".join(f"{answer}\n" for answer in typed), capture_output=True, text=True,
        timeout=60, cwd=ROOT, env=clean_env(HOST_DATA_DIR=str(tmp_path)),
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    said = done.stderr + done.stdout
    at = 0
    for line in lines:
        prompt = PROMPT.match(line)
        expected = f"{prompt[1]}: " if prompt else line.strip()
        found = said.find(expected, at)
        assert found >= 0, f"{expected!r} not in what host call said after {said[:at]!r}"
        at = found + len(expected)
