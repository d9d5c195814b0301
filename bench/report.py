"""Plain-text tables for the benchmark's report, and the PASS/MISS verdicts."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

__all__ = ["Check", "table", "verdict"]


@dataclass(frozen=True)
class Check:
    """One line of the ratio table: a measured value, and the target it is held to (if any)."""

    name: str
    value: float | None
    unit: str = "x"
    target: str = ""
    ok: bool | None = None
    note: str = ""

    def cells(self) -> list[str]:
        """The table cells of this line."""
        if self.value is None:
            shown = "n/a"
        elif self.unit == "x":
            shown = f"{self.value:.2f}x"
        elif self.unit == "count":
            shown = f"{self.value:,.0f}"
        else:
            shown = f"{self.value:,.2f} {self.unit}".strip()
        return [self.name, shown, self.target, verdict(self.ok), self.note]


def verdict(ok: bool | None) -> str:
    """PASS, MISS, or a dash when there is nothing to judge."""
    if ok is None:
        return "-"
    return "PASS" if ok else "MISS"


def table(header: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    """A left-aligned text table with a rule under the header."""
    widths = [len(h) for h in header]
    for row in rows:
        for i, cell in enumerate(row):
            widths[i] = max(widths[i], len(cell))

    def line(cells: Sequence[str]) -> str:
        return "  ".join(cell.ljust(widths[i]) for i, cell in enumerate(cells)).rstrip()

    rule = "  ".join("-" * w for w in widths)
    return "\n".join([line(header), rule, *(line(r) for r in rows)])
