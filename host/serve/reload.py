"""The specs a ``host serve`` master hands its workers: checked and compiled first, the last good
ones kept.

At start-up and on every reload (``kill -HUP``, or a file change under ``--reload``) the master
checks the spec directory as ``host validate`` does, imports the handlers afresh and compiles every
tool. Only when all of that succeeds does the result become :attr:`Specs.current`, which every
worker forked afterwards serves; otherwise the diagnostics go to the log and the workers go on
serving what they serve. So a typo in a spec never reaches a worker, and never stops the server.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from host.errors import HostError
from host.machine import Machine, compile_project
from host.machine.bind import forget_handlers
from host.protocol.digests import digest
from host.spec.check import check_project
from host.spec.diagnostics import Diagnostic
from host.spec.import_check import DEFAULT_TIME_LIMIT_S, import_problem
from host.spec.model import Project
from host.spec.report import format_diagnostics

__all__ = ["Snapshot", "Specs"]

log = logging.getLogger("host.serve")

Stamp = tuple[tuple[str, int, int], ...]


@dataclass(frozen=True)
class Snapshot:
    """One good load of the specs.

    Attributes:
        project: The checked specs.
        machines: The compiled tools.
        warnings: The checker's warnings (the kill switch, advice), already shown.
    """

    project: Project
    machines: dict[str, Machine]
    warnings: tuple[Diagnostic, ...] = ()

    @property
    def tag(self) -> str:
        """A short digest of the tools, for log lines."""
        return digest(sorted(m.describe()["name"] for m in self.machines.values()))[:10]


class Specs:
    """A spec directory and its handlers, as the master last loaded them well.

    Args:
        specs: The spec directory.
        handlers: The handlers directory.
        vet: What the deployment says about checked specs (specs that name scopes where no
            auth is set), or None when it serves them: a worker would refuse them at start.
        import_limit_s: Seconds a reload's handler modules may take to import in the child
            process that tries them first.
    """

    def __init__(
        self,
        specs: Path,
        handlers: Path,
        vet: Callable[[Project], str | None] = lambda project: None,
        import_limit_s: float = DEFAULT_TIME_LIMIT_S,
    ) -> None:
        self.specs = specs
        self.handlers = handlers
        self.vet = vet
        self.import_limit_s = import_limit_s
        self.current: Snapshot | None = None
        self._stamp = self._files()

    def load(self) -> Snapshot | list[Diagnostic] | HostError:
        """Check, import and compile the files as they are now.

        Returns:
            The snapshot (also kept as :attr:`current`); or, leaving :attr:`current` as it was,
            the checker's diagnostics when any is an error, or the error compiling raised.
        """
        self._stamp = self._files()
        result = check_project([self.specs], self.handlers)
        if result.project is None:
            return result.diagnostics
        refused = self.vet(result.project)
        if refused is not None:
            return HostError(refused)
        # NOTE: machines compiled before keep the functions they hold; only this load (and
        # the workers forked after it) sees the handler files as they are now.
        forget_handlers(self.handlers)
        try:
            machines = compile_project(result.project)
        except HostError as exc:
            return exc
        except (SystemExit, KeyboardInterrupt) as exc:
            # NOTE: raised by a handler module's top-level code, not by a signal to this process
            # (gunicorn's master takes signals through its own queue): it must not stop the host.
            return HostError(f"importing the handler modules raised {type(exc).__name__}: {exc}")
        self.current = Snapshot(result.project, machines, tuple(result.warnings))
        return self.current

    def reload(self) -> bool:
        """Load again; True when the new specs are good (and now :attr:`current`).

        The handler modules are imported in a child process first
        (:func:`host.spec.import_check.import_problem`): one that exits, crashes or hangs there
        is refused before this process imports it. Either way the log says what happened: the
        diagnostics or the reason, when the old specs stay.
        """
        problem = import_problem(self.specs, self.handlers, self.import_limit_s)
        loaded = self.load() if problem is None else HostError(problem)
        if isinstance(loaded, Snapshot):
            log.info(
                "specs reloaded",
                extra={
                    "event": "specs_reloaded",
                    "tools": len(loaded.machines),
                    "specs": loaded.tag,
                    "warnings": _lines(list(loaded.warnings)),
                },
            )
            return True
        if isinstance(loaded, HostError):
            problems = [loaded.message]
        else:
            problems = _lines([d for d in loaded if d.severity == "error"])
        log.error(
            "reload refused: the specs have errors; the workers keep serving the previous ones",
            extra={
                "event": "reload_refused",
                "errors": len(problems),
                "diagnostics": problems,
                "reason": problems[0] if problems else "",
            },
        )
        return False

    def changed(self) -> bool:
        """Whether a spec or handler file was added, removed or modified since the last load."""
        return self._files() != self._stamp

    def _files(self) -> Stamp:
        found: list[tuple[str, int, int]] = []
        for folder, pattern in ((self.specs, "*.yaml"), (self.handlers, "**/*.py")):
            for path in sorted(folder.glob(pattern)) if folder.is_dir() else ():
                try:
                    stat = path.stat()
                except OSError:
                    continue
                found.append((str(path), stat.st_mtime_ns, stat.st_size))
        return tuple(found)


def _lines(diagnostics: list[Diagnostic]) -> list[str]:
    if not diagnostics:
        return []
    return format_diagnostics(diagnostics, "text").splitlines()
