"""Where the tests find the project: its root, the help desk's specs and handlers, the fixtures."""

from __future__ import annotations

from pathlib import Path

__all__ = ["FIXTURES", "HANDLERS", "ROOT", "SPECS"]

#: The checkout's root (tests/support/ is two levels down).
ROOT = Path(__file__).resolve().parent.parent.parent
SPECS = ROOT / "specs"
HANDLERS = ROOT / "handlers"
#: tests/fixtures: small projects, good and broken, that tests load.
FIXTURES = ROOT / "tests" / "fixtures"
