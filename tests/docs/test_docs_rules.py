"""docs/rules.md is the validator's rule table as ``python -m host.spec.rules_doc`` writes it."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from host.spec.rules_doc import render
from support.paths import ROOT

PAGE = ROOT / "docs" / "rules.md"


def test_the_rules_page_is_up_to_date() -> None:
    assert PAGE.read_text() == render(), (
        "docs/rules.md is out of date: run python -m host.spec.rules_doc docs/rules.md"
    )


def test_the_generator_prints_the_page_or_writes_it(tmp_path: Path) -> None:
    printed = subprocess.run(
        [sys.executable, "-m", "host.spec.rules_doc"],
        capture_output=True, text=True, timeout=60, check=True,
    )  # fmt: skip
    assert printed.stdout == render()
    written = tmp_path / "rules.md"
    subprocess.run([sys.executable, "-m", "host.spec.rules_doc", str(written)], check=True)
    assert written.read_text() == render()
