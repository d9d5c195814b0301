"""Diagnostics: one problem found in a spec, with its stable rule id and exact place."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from host.spec.model import Pos

__all__ = ["Diagnostic", "Severity"]

Severity = Literal["error", "warning"]


@dataclass(frozen=True, order=True)
class Diagnostic:
    """One problem in a spec.

    Attributes:
        pos: Where it is (file, 1-based line and column).
        rule: A stable rule id such as ``order`` or ``unknown-key``, documented in docs/rules.md.
        severity: ``error`` blocks serving; ``warning`` does not (unless ``--strict``).
        message: A sentence that says what is wrong and how to fix it.
    """

    pos: Pos
    rule: str
    severity: Severity
    message: str
