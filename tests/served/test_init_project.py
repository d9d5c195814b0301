"""``host init DIR`` writes tests and a pytest configuration that pass from any directory."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from support.paths import ROOT

pytestmark = pytest.mark.served


def run(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("HOST_", "PYTEST_"))}
    return subprocess.run(
        [sys.executable, *args], capture_output=True, text=True, env=env, cwd=cwd, timeout=300
    )


@pytest.fixture
def desk(tmp_path: Path) -> Path:
    made = run(tmp_path, "-m", "host", "init", "desk")
    assert made.returncode == 0, made.stderr
    assert "  pytest desk " in made.stdout
    return tmp_path / "desk"


def test_init_writes_a_pytest_file_and_its_configuration(desk: Path) -> None:
    assert "host_specs = specs" in (desk / "pytest.ini").read_text()
    assert (
        "def test_a_note_is_saved_after_a_yes(mcp):" in (desk / "tests/test_notes.py").read_text()
    )


@pytest.mark.parametrize("where", ["elsewhere", "inside", "the clone"])
def test_pytest_dir_passes_from_any_directory(desk: Path, where: str) -> None:
    other = desk.parent / "elsewhere"
    other.mkdir()
    cwd = {"elsewhere": other, "inside": desk, "the clone": ROOT}[where]
    target = "." if where == "inside" else str(desk)
    tested = run(cwd, "-m", "pytest", "-q", "-p", "no:cacheprovider", target)
    assert tested.returncode == 0, tested.stdout + tested.stderr
    # The three tests of tests/test_notes.py and the two examples of specs/notes.yaml.
    assert "5 passed" in tested.stdout


def test_without_the_configuration_the_failure_names_host_specs(desk: Path) -> None:
    (desk / "pytest.ini").unlink()
    tested = run(desk.parent, "-m", "pytest", "-q", "-p", "no:cacheprovider", "desk/tests")
    assert tested.returncode == 1
    assert (
        f"the mcp fixture has no spec directory to serve: {desk.parent / 'specs'} does not exist "
        f"(from the default host_specs = specs, relative to {desk.parent} (pytest found no ini "
        "file there)); set host_specs in the pytest.ini (or [tool.pytest.ini_options]) beside "
        "your tests, as host init writes it, pass --host-specs DIR, or override the host_specs "
        "fixture"
    ) in tested.stdout
