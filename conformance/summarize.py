"""Totals of one ``conformance/run``: passed, failed and expected failures per suite version.

Reads the ``checks.json`` files the suite writes (``-o DIR``: one ``server-<scenario>-<time>/``
folder per scenario) and judges each scenario against its expected-failures file the way the suite
does: a FAILURE or WARNING check fails a scenario; a whole-scenario entry excuses all of it, a
``scenario:check-id`` entry excuses that check only; an entry that passes is stale.

Usage: ``python conformance/summarize.py LABEL DIR BASELINE [--scored REQUIREMENTS.yaml] ...``
(repeat the triple per suite run). Exits 1 when any run has an unexpected failure or a stale entry.
"""

from __future__ import annotations

import json
import re
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ruamel.yaml import YAML

__all__ = ["Verdict", "judge", "main"]

_DIR = re.compile(r"^server-(?P<scenario>.+)-\d{4}-\d{2}-\d{2}T\d{2}-\d{2}-\d{2}-\d{3}Z$")
_FAILED = ("FAILURE", "WARNING")
_SEVERITY = {"FAILURE": 3, "WARNING": 2, "SUCCESS": 1}


@dataclass
class Verdict:
    """How one suite run went, by scenario."""

    label: str
    passed: list[str] = field(default_factory=list)
    failed: list[str] = field(default_factory=list)
    expected: list[str] = field(default_factory=list)
    stale: list[str] = field(default_factory=list)
    unscored: dict[str, bool] = field(default_factory=dict)
    checks_passed: int = 0
    checks_failed: int = 0


def _load_yaml(path: Path) -> Any:
    return YAML(typ="safe").load(path.read_text(encoding="utf-8"))


def _baseline(path: Path) -> tuple[set[str], dict[str, set[str]]]:
    data = _load_yaml(path) or {}
    whole: set[str] = set()
    per_check: dict[str, set[str]] = {}
    for entry in data.get("server") or []:
        scenario, _, check = str(entry).partition(":")
        if check:
            per_check.setdefault(scenario, set()).add(check)
        else:
            whole.add(scenario)
    return whole, per_check


def _collapse(checks: list[dict[str, Any]]) -> dict[str, str]:
    """The worst status of each check id, as the suite collapses repeated ids."""
    worst: dict[str, str] = {}
    for check in checks:
        status = check.get("status", "")
        if status == "INFO":
            continue
        current = worst.get(check["id"])
        if current is None or _SEVERITY.get(status, 0) >= _SEVERITY.get(current, 0):
            worst[check["id"]] = status
    return worst


def _results(directory: Path) -> dict[str, list[dict[str, Any]]]:
    results: dict[str, list[dict[str, Any]]] = {}
    for folder in sorted(directory.glob("server-*")):
        match = _DIR.match(folder.name)
        checks_file = folder / "checks.json"
        if match and checks_file.is_file():
            results[match["scenario"]] = json.loads(checks_file.read_text(encoding="utf-8"))
    return results


def judge(label: str, directory: Path, baseline: Path, scored: set[str] | None) -> Verdict:
    """Judge every scenario found under ``directory`` against ``baseline``."""
    whole, per_check = _baseline(baseline)
    verdict = Verdict(label)
    for scenario, checks in _results(directory).items():
        worst = _collapse(checks)
        failing = {cid for cid, status in worst.items() if status in _FAILED}
        verdict.checks_failed += len(failing)
        verdict.checks_passed += sum(1 for status in worst.values() if status == "SUCCESS")
        if scored is not None and scenario not in scored:
            verdict.unscored[scenario] = bool(failing)
            continue
        if scenario in whole:
            (verdict.expected if failing else verdict.stale).append(scenario)
            continue
        allowed = per_check.get(scenario, set())
        unexpected = sorted(failing - allowed)
        if unexpected:
            verdict.failed.append(f"{scenario} ({', '.join(unexpected)})")
        elif failing:
            verdict.expected.append(f"{scenario} ({', '.join(sorted(failing))})")
        else:
            verdict.passed.append(scenario)
        verdict.stale += [f"{scenario}:{c}" for c in sorted(allowed) if worst.get(c) == "SUCCESS"]
    return verdict


def _print(verdict: Verdict) -> None:
    total = len(verdict.passed) + len(verdict.failed) + len(verdict.expected) + len(verdict.stale)
    print(
        f"{verdict.label}: {total} scenarios: {len(verdict.passed)} passed, "
        f"{len(verdict.failed)} failed, {len(verdict.expected)} expected failures, "
        f"{len(verdict.stale)} stale baseline entries "
        f"(checks: {verdict.checks_passed} passed, {verdict.checks_failed} failed)"
    )
    for name in verdict.failed:
        print(f"    FAILED    {name}")
    for name in verdict.stale:
        print(f"    STALE     {name} passes: remove it from the expected failures")
    if verdict.unscored:
        failing = sorted(s for s, bad in verdict.unscored.items() if bad)
        print(
            f"    not scored by the requirement set: {len(verdict.unscored)} run, "
            f"{len(failing)} failing ({', '.join(failing) or 'none'})"
        )


def _scored(path: Path) -> set[str]:
    data = _load_yaml(path) or {}
    return {str(s) for s in data.get("server") or []}


def main(argv: list[str]) -> int:
    """Print the totals of each ``LABEL DIR BASELINE [--scored FILE]`` run; 1 on any regression."""
    verdicts: list[Verdict] = []
    args = list(argv)
    while args:
        if len(args) < 3:
            print(__doc__, file=sys.stderr)
            return 2
        label, directory, baseline, *args = args
        scored = None
        if args[:1] == ["--scored"]:
            scored = _scored(Path(args[1]))
            args = args[2:]
        verdicts.append(judge(label, Path(directory), Path(baseline), scored))
    print("\n=== conformance totals ===")
    for verdict in verdicts:
        _print(verdict)
    bad = any(v.failed or v.stale for v in verdicts)
    print("RESULT: " + ("unexpected failures or stale entries" if bad else "all as expected"))
    passed = sum(len(v.passed) for v in verdicts)
    failed = sum(len(v.failed) + len(v.stale) for v in verdicts)
    skipped = sum(len(v.expected) for v in verdicts)
    # The closing line test runners print; expected failures count as skipped.
    print(f"conformance: {passed} passed, {failed} failed, {skipped} skipped")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
