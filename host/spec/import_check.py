"""Import the handler modules in a child process first, so whatever they do cannot harm the caller.

A handler module runs its top-level code when imported: it may raise ``SystemExit``, call
``os._exit``, hang or crash the interpreter. ``host serve``'s master imports the handlers on every
reload; importing them first here, as ``host validate --import`` does (the same checks, in a
child ``python -m host.spec.import_check``), under a time limit, turns any of that into a reason
the master logs while its workers go on serving.
"""

from __future__ import annotations

import json
import signal
import subprocess
import sys
from pathlib import Path

__all__ = ["DEFAULT_TIME_LIMIT_S", "import_problem", "main"]

#: Seconds the handler modules may take to import before the reload is refused.
DEFAULT_TIME_LIMIT_S = 30.0

_OUTPUT_LIMIT = 2000


def import_problem(
    specs: Path, handlers: Path, time_limit_s: float = DEFAULT_TIME_LIMIT_S
) -> str | None:
    """Why the handlers of the specs in ``specs`` cannot be imported safely, or None.

    The import runs in a child process; a problem is an error the check found (an import that
    raised, even ``SystemExit``), the child's exit or death before it reported, or its running
    past ``time_limit_s``.
    """
    argv = [sys.executable, "-m", "host.spec.import_check", str(specs), str(handlers)]
    try:
        done = subprocess.run(
            argv, capture_output=True, timeout=time_limit_s, stdin=subprocess.DEVNULL, check=False
        )
    except subprocess.TimeoutExpired:
        return (
            f"importing the handler modules in {handlers} did not finish within "
            f"{time_limit_s:g} s (a module that waits at import time?)"
        )
    except OSError as exc:
        return f"cannot start a process to import the handler modules: {exc.strerror}"
    if done.returncode == 0:
        return _reported(done.stdout)
    return f"importing the handler modules in {handlers} {_death(done.returncode)}{_tail(done)}"


def _reported(stdout: bytes) -> str | None:
    """The child's report: None when it found no error."""
    try:
        errors = json.loads(stdout.decode("utf-8", "replace").strip().splitlines()[-1])
    except (ValueError, IndexError):
        return "the handler import check reported nothing readable"
    return "; ".join(str(e) for e in errors) if errors else None


def _death(returncode: int) -> str:
    if returncode < 0:
        try:
            name = signal.Signals(-returncode).name
        except ValueError:
            name = f"signal {-returncode}"
        return f"killed the process importing them ({name})"
    return f"ended the process importing them (exit status {returncode})"


def _tail(done: subprocess.CompletedProcess[bytes]) -> str:
    text = (done.stderr or done.stdout or b"").decode("utf-8", "replace").strip()
    return f": {text[-_OUTPUT_LIMIT:]}" if text else ""


def main(argv: list[str]) -> int:
    """The child: check ``SPECS HANDLERS`` importing the handlers; print the import errors as JSON.

    Only the imports' own errors: the parent checks the specs themselves, and reports their
    diagnostics its usual way.
    """
    from host.spec.check import check_project  # the child's own; the parent never imports here

    specs, handlers = argv
    result = check_project([Path(specs)], Path(handlers), import_handlers=True)
    errors = [f"{d.pos}: {d.message}" for d in result.diagnostics if d.rule == "handler-import"]
    sys.stdout.flush()
    print(json.dumps(errors), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
