"""Read spec files into plain data, remembering the file, line and column of every key and value.

ruamel.yaml composes each document into a node graph; we convert that graph ourselves (instead of
letting ruamel construct objects) so that every value gets a :class:`Loc` keyed by its path in the
document, duplicate keys are reported at the duplicate (naming the first), and one broken document
does not hide the problems of the others.
"""

from __future__ import annotations

import math
import re
import warnings
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ruamel.yaml import YAML
from ruamel.yaml.error import MarkedYAMLError, YAMLError
from ruamel.yaml.nodes import MappingNode, Node, ScalarNode, SequenceNode

from host.spec.diagnostics import Diagnostic
from host.spec.model import Pos
from host.spec.rules import error

__all__ = ["Document", "Loc", "Locs", "YPath", "load_file", "load_paths", "spec_files"]

YPath = tuple[str | int, ...]
_CORE = "tag:yaml.org,2002:"
_DECIMAL = re.compile(r"^[-+]?[0-9][0-9_]*$")


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


@dataclass
class Document:
    """One YAML document: its plain data (dicts, lists, scalars) and where each part was written."""

    data: Any
    locs: Locs
    index: int

    @property
    def file(self) -> str:
        """The file this document came from, as the user named it."""
        return self.locs.file


def spec_files(paths: list[Path]) -> tuple[list[Path], list[Diagnostic]]:
    """Every spec file named by ``paths``: files as given, directories' ``*.yaml`` by name."""
    found: list[Path] = []
    problems: list[Diagnostic] = []
    for path in paths:
        if path.is_dir():
            found.extend(sorted(p for p in path.glob("*.yaml") if p.is_file()))
        elif path.is_file():
            found.append(path)
        else:
            problems.append(
                error(Pos(str(path), 0, 0), "read-error", f"no such file or directory: {path}")
            )
    return found, problems


def load_paths(paths: list[Path]) -> tuple[list[Document], list[Diagnostic]]:
    """Load every document of every spec file named by ``paths``."""
    files, problems = spec_files(paths)
    documents: list[Document] = []
    for file in files:
        docs, diags = load_file(file)
        documents.extend(docs)
        problems.extend(diags)
    return documents, problems


def load_file(path: Path) -> tuple[list[Document], list[Diagnostic]]:
    """Load the documents of one file; a syntax error keeps the documents before it."""
    name = str(path)
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        return [], [error(Pos(name, 0, 0), "read-error", f"cannot read {name}: {exc}")]
    return load_text(text, name)


def load_text(
    text: str, name: str, *, pure: bool = False
) -> tuple[list[Document], list[Diagnostic]]:
    """Load the documents of ``text`` as if read from the file ``name``.

    Args:
        pure: Use the pure-Python parser even when the C one is installed (for tests).
    """
    documents: list[Document] = []
    problems: list[Diagnostic] = []
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            for index, root in enumerate(_compose_all(text, pure=pure)):
                if root is None or (
                    isinstance(root, ScalarNode) and str(root.tag) == _CORE + "null"
                ):
                    continue
                builder = _Builder(Locs(name, text), problems)
                data = builder.convert(root, (), None)
                documents.append(Document(data, builder.locs, index))
    except MarkedYAMLError as exc:
        problems.append(_syntax(exc, name))
    except YAMLError as exc:
        problems.append(error(Pos(name, 1, 1), "yaml-syntax", str(exc).strip()))
    except RecursionError:
        problems.append(error(Pos(name, 1, 1), "yaml-syntax", "the YAML nests too deeply"))
    return documents, problems


def _compose_all(text: str, *, pure: bool = False) -> Iterator[Node | None]:
    # NOTE: the "safe" composer uses libyaml through ruamel.yaml.clib when it is installed (about
    # six times faster than pure Python on large spec directories); both give the same nodes.
    yield from YAML(typ="safe", pure=pure).compose_all(text)


def _syntax(exc: MarkedYAMLError, name: str) -> Diagnostic:
    mark = exc.problem_mark or exc.context_mark
    pos = Pos(name, mark.line + 1, mark.column + 1) if mark is not None else Pos(name, 1, 1)
    message = str(exc.problem or exc.context or "invalid YAML").strip()
    if exc.context and exc.problem and exc.context_mark is not None:
        message = f"{message} ({exc.context.strip()} at line {exc.context_mark.line + 1})"
    return error(pos, "yaml-syntax", message)


def _pos(name: str, mark: Any) -> Pos:
    return Pos(name, mark.line + 1, mark.column + 1)


class _Builder:
    """Turns one node graph into plain data, filling ``locs`` and reporting duplicate keys."""

    def __init__(self, locs: Locs, problems: list[Diagnostic]) -> None:
        self.locs = locs
        self.problems = problems
        self.active: set[int] = set()

    def convert(self, node: Node, path: YPath, key: Any) -> Any:
        file = self.locs.file
        start, end = node.start_mark, node.end_mark
        key_line, key_column = (key.line + 1, key.column + 1) if key is not None else (0, 0)
        self.locs.table[path] = (
            key_line,
            key_column,
            start.line + 1,
            start.column + 1,
            start.index,
            end.index,
        )
        if id(node) in self.active:
            self.problems.append(
                error(_pos(file, node.start_mark), "yaml-syntax", "an alias refers to itself")
            )
            return None
        self.active.add(id(node))
        try:
            if isinstance(node, MappingNode):
                return self._mapping(node, path)
            if isinstance(node, SequenceNode):
                return [self.convert(item, (*path, i), None) for i, item in enumerate(node.value)]
            return self._scalar(node)
        finally:
            self.active.discard(id(node))

    def _mapping(self, node: MappingNode, path: YPath) -> dict[str, Any]:
        file = self.locs.file
        result: dict[str, Any] = {}
        # NOTE: merged keys ('<<: *base') go in first so that explicit keys override them.
        for key_node, value_node in node.value:
            if str(key_node.tag) == _CORE + "merge":
                sources = value_node.value if isinstance(value_node, SequenceNode) else [value_node]
                for source in sources:
                    if isinstance(source, MappingNode):
                        result.update(self._mapping(source, path))
                    else:
                        self.problems.append(
                            error(
                                _pos(file, source.start_mark),
                                "wrong-type",
                                "'<<' merges mappings only",
                            )
                        )
        first: dict[str, int] = {}
        for key_node, value_node in node.value:
            mark = key_node.start_mark
            if str(key_node.tag) == _CORE + "merge":
                continue
            if not isinstance(key_node, ScalarNode):
                self.problems.append(
                    error(
                        _pos(file, mark),
                        "wrong-type",
                        "a key must be plain text, not a list or mapping",
                    )
                )
                continue
            key = str(key_node.value)
            if key in first:
                self.problems.append(
                    error(
                        _pos(file, mark),
                        "duplicate-key",
                        f"duplicate key '{key}' (first defined at line {first[key]});"
                        " delete one of them",
                    )
                )
                continue
            first[key] = mark.line + 1
            result[key] = self.convert(value_node, (*path, key), mark)
        return result

    def _scalar(self, node: Node) -> Any:
        tag = str(node.tag)
        text = str(node.value)
        if tag == _CORE + "null":
            return None
        if tag == _CORE + "bool":
            return text.lower() == "true"
        if tag == _CORE + "int":
            return _int(text)
        if tag == _CORE + "float":
            return _float(text)
        if tag.startswith("!") and not tag.startswith("!!"):
            self.problems.append(
                error(
                    _pos(self.locs.file, node.start_mark),
                    "yaml-syntax",
                    f"YAML tags like '{tag}' are not supported; remove the tag",
                )
            )
        return text


def _int(text: str) -> int | str:
    plain = text.replace("_", "")
    try:
        return int(plain, 10) if _DECIMAL.match(text) else int(plain, 0)
    except ValueError:
        return text


def _float(text: str) -> float | str:
    lowered = text.lower().replace("_", "")
    if lowered in (".inf", "+.inf"):
        return math.inf
    if lowered == "-.inf":
        return -math.inf
    if lowered == ".nan":
        return math.nan
    try:
        return float(lowered)
    except ValueError:
        return text
