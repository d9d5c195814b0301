"""The compiled ``read``, ``ask`` and ``confirm`` steps a machine's run loop walks through."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from host.machine.bind import Handler
from host.machine.forms import Form
from host.machine.remember import Remember
from host.machine.timing import DEFAULT_READ_S
from host.machine.types import Ending
from host.spec.templates import Renderer

__all__ = ["QuestionStep", "ReadStep"]


@dataclass(frozen=True)
class ReadStep:
    """A compiled ``read``: its handler, its ``missing`` text, the names it reads, its limit."""

    name: str
    handler: Handler
    missing: Renderer | None
    deps: frozenset[str]
    timeout_s: float = DEFAULT_READ_S


@dataclass(frozen=True)
class QuestionStep:
    """A compiled ``ask`` or ``confirm``.

    Attributes:
        deps: Names its message, ``when`` and options read: it waits while any is pending.
        outputs: Names it binds (its fields and its own name).
        endings: The results for ``declined``, ``cancelled`` and (confirm) ``unticked``.
        remember: A confirm's ``remember:``, when it has one.
    """

    name: str
    confirm: bool
    message: Renderer
    when: Renderer | None
    form: Form
    endings: Mapping[Ending, Renderer]
    deps: frozenset[str]
    outputs: frozenset[str]
    remember: Remember | None = None
