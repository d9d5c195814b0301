"""The scale section keeps the fastest of several fresh processes, and says how they spread.

A single cold process's start-up or ``host validate`` time moved by half between full runs on a
shared machine; the benchmark keeps the fastest of a few, as its throughput rounds keep their
best, and its note shows the others so the spread is never hidden.
"""

from __future__ import annotations

import os
from pathlib import Path
from types import SimpleNamespace
from typing import Any, cast

from bench import scale, verdicts

# NOTE: each run takes the next figure from a file and prints it after a line of its own, as
# the real scripts print what they import; the fastest is the middle one, neither end.
_PRINTS = """
import json, pathlib
figures = pathlib.Path({path!r})
first, *rest = figures.read_text().split()
figures.write_text(" ".join(rest))
print("loading")
print(json.dumps({{"seconds": float(first), "other": "kept"}}))
"""


def test_the_fastest_of_fresh_processes_is_kept_with_every_run(tmp_path: Path) -> None:
    figures = tmp_path / "figures"
    figures.write_text("2.5 1.25 3.0")
    env = {"PATH": os.environ.get("PATH", "")}
    kept = scale._fastest(_PRINTS.format(path=str(figures)), env, None, "seconds", 3)
    assert kept == {"seconds": 1.25, "other": "kept", "runs_s": [2.5, 1.25, 3.0]}


def test_the_note_gives_the_spread_only_for_several_runs() -> None:
    assert verdicts._spread([1.9, 1.75, 3.1]) == "fastest of 3 fresh processes (1.75 to 3.10 s)"
    assert verdicts._spread([1.9]) == ""
    assert verdicts._spread([]) == ""


def test_start_up_and_validate_say_how_they_spread_and_memory_does_not() -> None:
    big = scale.ScaleRun(1000, create_s=0.88, create_runs_s=[0.91, 0.88, 0.9])
    big.worker_rss_mb = [57.4]
    validate = {"tools": 1000, "seconds": 2.07, "runs_s": [2.36, 2.07, 2.2]}
    bench = SimpleNamespace(scale_runs=[big], validate=validate, validate_error=None)
    checks = {c.name: c for c in verdicts.scale_checks(cast(Any, bench))}
    start_up = checks["start-up, 1,000 tools (create_app)"]
    assert (start_up.value, start_up.ok) == (0.88, True)
    assert start_up.note == "fastest of 3 fresh processes (0.88 to 0.91 s)"
    assert checks["RSS per worker, 1,000 tools"].note == ""
    validated = checks["host validate, 1000 specs"]
    assert (validated.value, validated.ok) == (2.07, True)
    assert validated.note == "fastest of 3 fresh processes (2.07 to 2.36 s)"
