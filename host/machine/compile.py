"""Compile a checked project into machines, once, at start-up.  (CONTRACT STUB.)"""

from __future__ import annotations

from host.machine.run import Machine
from host.spec.model import Project


def compile_project(project: Project) -> dict[str, Machine]:
    """Every tool of ``project`` as a machine, by name, in the project's (sorted) order."""
    raise NotImplementedError
