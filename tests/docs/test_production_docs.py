"""docs/operating.md's "Running in production" kept true to the code: its command and its figures.

The plain gunicorn command it shows must set what ``host serve`` sets (``--dry-run`` prints that),
and the limits it names (threads per worker, GET streams per worker, handler threads, the lease a
dead worker's claim lapses after) must be the code's.
"""

from __future__ import annotations

import re
import shlex

from host.machine.timing import Runner
from host.protocol.legacy.sessions import LegacyOptions
from host.serve.start import ServeOptions, gunicorn_argv
from host.store import DEFAULT_LEASE_S
from support.paths import ROOT

README = (ROOT / "docs" / "operating.md").read_text()


def section(title: str) -> str:
    start = README.index(f"\n## {title}\n")
    end = README.find("\n## ", start + 1)
    return README[start:end]


def options(argv: list[str]) -> dict[str, str]:
    """``--name value`` pairs (and bare ``--flag``s) of a command line, without ``--bind``."""
    found: dict[str, str] = {}
    for i, word in enumerate(argv):
        if word.startswith("--") and word != "--bind":
            following = argv[i + 1] if i + 1 < len(argv) else ""
            found[word] = "" if following.startswith("--") or not following else following
    return found


def test_the_plain_gunicorn_command_sets_what_host_serve_sets() -> None:
    (block,) = re.findall(r"```sh\n(.*?)```", section("Running in production"), re.S)
    argv = shlex.split(block.replace("\\\n", " "))
    shown = options(argv[argv.index("gunicorn") :])
    assert shown == options(gunicorn_argv(ServeOptions()))


def test_the_limits_it_names_are_the_codes() -> None:
    text = section("Running in production")
    threads = ServeOptions().threads
    assert f"--threads {threads}" in text and f"{threads:,} threads" in text
    assert f"at most {LegacyOptions().listeners} per worker" in text
    assert f"up to {Runner()._threads} threads per process" in text
    assert f"the claim's {DEFAULT_LEASE_S:g} s lease" in text
