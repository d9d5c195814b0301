"""Run every spec example like a test runner: a line per example, the differences on failure.

Used by ``host test``. Each example runs against a fresh app with a fresh data directory, so one
example's writes never leak into the next; the summary line is exactly ``N passed, N failed``.
"""

from __future__ import annotations

import tempfile
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TextIO

from host.errors import HostError, SpecError
from host.spec.model import Project
from host.testing.examples import Case, run_example
from host.testing.harness import serve

__all__ = ["Summary", "cases", "describe_spec_error", "run_cases"]


@dataclass(frozen=True)
class Summary:
    """How a run went."""

    passed: int
    failed: int

    def __str__(self) -> str:
        return f"{self.passed} passed, {self.failed} failed"


def cases(project: Project, *, only: Path | None = None, keyword: str | None = None) -> list[Case]:
    """Every example of every tool, in the project's order.

    Args:
        project: The loaded project.
        only: Keep the examples written in this file.
        keyword: Keep the examples whose ``tool > name`` contains this text.
    """
    found: list[Case] = []
    for tool in project.tools:
        for example in tool.examples:
            case = Case(tool.name, example, example.pos.file or tool.pos.file, example.pos.line)
            if only is not None and not _same_file(case.file, only):
                continue
            if keyword and keyword.lower() not in case.title.lower():
                continue
            found.append(case)
    return found


def _same_file(written: str, wanted: Path) -> bool:
    try:
        return Path(written).resolve() == wanted.resolve()
    except OSError:
        return False


def run_cases(
    project: Project,
    specs_dir: Path,
    handlers_dir: Path | None,
    to_run: Iterable[Case],
    out: TextIO,
    *,
    env: Mapping[str, str | None] | None = None,
) -> Summary:
    """Run examples one by one, each with a fresh app and data directory, reporting to ``out``."""
    passed = failed = 0
    for case in to_run:
        with tempfile.TemporaryDirectory(prefix="host-test-") as data:
            try:
                with serve(
                    specs_dir, handlers_dir, data_dir=Path(data), env=env, project=project
                ) as client:
                    problems = run_example(client, case)
            except HostError as exc:
                problems = [f"the host could not serve the specs: {exc}"]
        if problems:
            failed += 1
            out.write(f"FAIL  {case.where}  {case.title}\n")
            for line in problems:
                out.write(f"      {line}\n")
        else:
            passed += 1
            out.write(f"ok    {case.where}  {case.title}\n")
    summary = Summary(passed, failed)
    out.write(f"{summary}\n")
    return summary


def describe_spec_error(exc: SpecError) -> list[str]:
    """One line per diagnostic: ``file:line:col: severity: message [rule]``."""
    lines = []
    for diagnostic in exc.diagnostics:
        pos = getattr(diagnostic, "pos", "")
        severity = getattr(diagnostic, "severity", "error")
        message = getattr(diagnostic, "message", str(diagnostic))
        rule = getattr(diagnostic, "rule", "")
        lines.append(f"{pos}: {severity}: {message}" + (f" [{rule}]" if rule else ""))
    return lines or [str(exc)]
