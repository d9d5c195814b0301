"""The distribution's name, the extras' install lines, and the PATH hint of the first commands."""

from __future__ import annotations

import os
import sys
import tomllib
from pathlib import Path

import pytest

from host.commands.path_hint import path_hint
from host.extras import DISTRIBUTION, install_line, requirements
from support.paths import ROOT


def test_the_distribution_is_not_named_host() -> None:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    assert project["name"] == DISTRIBUTION == "declarative-mcp-host"
    assert project["scripts"] == {"host": "host.cli:main"}


EXTRAS = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["optional-dependencies"]


@pytest.mark.parametrize("extra", ["auth", "otel", "redis", "fast", "pytest"])
def test_each_install_line_installs_what_the_extra_does(extra: str) -> None:
    written = [r.replace(" ", "") for r in requirements(extra)]
    assert written == [r.replace(" ", "") for r in EXTRAS[extra]]
    line = install_line(extra)
    assert "host[" not in line and f"pip install -e '.[{extra}]'" in line


def test_the_path_hint_says_how_to_get_host_on_the_path(monkeypatch: pytest.MonkeyPatch) -> None:
    bindir = Path(sys.executable).parent
    if not (bindir / "host").exists():
        pytest.skip("host is not installed beside this Python")
    monkeypatch.setenv("PATH", "/nowhere")
    hint = path_hint()
    assert hint is not None and hint.startswith("note: host is not on your PATH here: ")
    assert "activate" in hint and "bin/host" in hint
    monkeypatch.setenv("PATH", f"{bindir}{os.pathsep}/nowhere")
    assert path_hint() is None
