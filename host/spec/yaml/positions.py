"""Where each value of a spec document was written: positions by path, for exact diagnostics."""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from host.spec.model import Pos

__all__ = ["Loc", "Locs", "YPath"]

YPath = tuple[str | int, ...]


@dataclass(frozen=True, slots=True)
class Loc:
    """Where one value was written.

    Attributes:
        key: The position of its key (None for list items and the document itself).
        value: The position where the value starts.
        start: Character offset of the value's start in the file text.
        end: Character offset just past the value.
    """

    key: Pos | None
    value: Pos
    start: int
    end: int


# (key line, key column, value line, value column, start, end); a key line of 0 means no key.
_Raw = tuple[int, int, int, int, int, int]


@dataclass
class Locs:
    """The :class:`Loc` of every value in one document, by path (``("steps", 0, "call")``)."""

    file: str
    text: str
    # NOTE: plain tuples, turned into Pos only when asked: a big spec directory has many values
    # and few problems.
    table: dict[YPath, _Raw] = field(default_factory=dict)

    def get(self, path: YPath) -> Loc:
        """The Loc of ``path`` or of its nearest written ancestor."""
        while path not in self.table and path:
            path = path[:-1]
        raw = self.table.get(path)
        if raw is None:
            return Loc(None, Pos(self.file, 1, 1), 0, 0)
        key_line, key_column, line, column, start, end = raw
        key = Pos(self.file, key_line, key_column) if key_line else None
        return Loc(key, Pos(self.file, line, column), start, end)

    def key(self, path: YPath) -> Pos:
        """Where the key of ``path`` is (its value's position for list items and the root)."""
        loc = self.get(path)
        return loc.key or loc.value

    def value(self, path: YPath) -> Pos:
        """Where the value of ``path`` starts."""
        return self.get(path).value

    def word(self, path: YPath, word: str) -> Pos:
        """Where ``word`` first appears inside the value at ``path`` (else the value's start)."""
        loc = self.get(path)
        pattern = re.compile(r"(?<![\w.])" + re.escape(word) + r"(?!\w)")
        found = pattern.search(self.text, loc.start, max(loc.end, loc.start))
        if found is None:
            return loc.value
        line = self.text.count("\n", 0, found.start()) + 1
        column = found.start() - (self.text.rfind("\n", 0, found.start()) + 1) + 1
        return Pos(self.file, line, column)

    def line(self, path: YPath, lineno: int) -> Pos:
        """Where line ``lineno`` of a literal block (``|``) value starts; else the value's start."""
        loc = self.get(path)
        if lineno <= 1 or not self.text.startswith("|", loc.start):
            return loc.value
        # NOTE: a literal block's text starts on the line after its `|` indicator.
        line = loc.value.line + lineno
        lines = self.text.splitlines()
        if line > len(lines):
            return loc.value
        source = lines[line - 1]
        return Pos(self.file, line, len(source) - len(source.lstrip()) + 1)
