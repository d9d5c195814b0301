"""What a tool rule may look at, so that every family of rules is called the same way."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from host.spec.build import ToolDoc
from host.spec.diagnostics import Diagnostic
from host.spec.handlers import HandlerIndex
from host.spec.scope import Scopes
from host.spec.yaml import Document

__all__ = ["DocumentRule", "ToolFacts", "ToolRule"]


@dataclass(frozen=True)
class ToolFacts:
    """One built tool, the names in scope at each of its steps, and the handlers it may call."""

    doc: ToolDoc
    scopes: Scopes
    handlers: HandlerIndex


DocumentRule = Callable[[Document], list[Diagnostic]]
ToolRule = Callable[[ToolFacts], list[Diagnostic]]
