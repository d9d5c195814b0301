"""Read spec files into plain data, remembering the file, line and column of every key and value.

ruamel.yaml composes each document into a node graph; :class:`~host.spec.yaml.nodes.Builder`
converts that graph itself (instead of letting ruamel construct objects) so that every value gets
a :class:`~host.spec.yaml.positions.Loc` keyed by its path in the document, duplicate keys are
reported at the duplicate (naming the first), and one broken document does not hide the problems
of the others.
"""

from __future__ import annotations

import warnings
from collections.abc import Iterator
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

from ruamel.yaml import YAML
from ruamel.yaml.compat import _DEFAULT_YAML_VERSION
from ruamel.yaml.error import MarkedYAMLError, YAMLError
from ruamel.yaml.nodes import MappingNode, Node, ScalarNode, SequenceNode
from ruamel.yaml.resolver import VersionedResolver
from ruamel.yaml.tag import Tag

from host.spec.diagnostics import Diagnostic
from host.spec.model import Pos
from host.spec.rulebook import error
from host.spec.yaml.hints import syntax_hint, syntax_place
from host.spec.yaml.nodes import Builder
from host.spec.yaml.positions import Locs

__all__ = [
    "Document",
    "load_file",
    "load_paths",
    "load_text",
    "spec_files",
]

_NULL = "tag:yaml.org,2002:null"
_MISSING = object()


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
        data = path.read_bytes()
    except OSError as exc:
        return [], [error(Pos(name, 0, 0), "read-error", f"cannot read {name}: {exc}")]
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        return [], [_not_utf8(name, data, exc)]
    # NOTE: editors do not count a byte-order mark as a column; neither do we.
    return load_text(text.removeprefix("\ufeff"), name)


def _not_utf8(name: str, data: bytes, exc: UnicodeDecodeError) -> Diagnostic:
    """A read error at the line and column of the first byte that is not UTF-8."""
    before = data[: exc.start]
    line = before.count(b"\n") + 1
    start = before.rfind(b"\n") + 1
    column = len(before[start:].decode("utf-8", "replace")) + 1
    byte = data[exc.start]
    return error(
        Pos(name, line, column),
        "read-error",
        f"{name} is not UTF-8 text: byte 0x{byte:02X} at line {line} is not valid UTF-8 "
        "(the file was probably saved as Latin-1 or Windows-1252); save it as UTF-8",
    )


def load_text(
    text: str, name: str, *, pure: bool = False
) -> tuple[list[Document], list[Diagnostic]]:
    """Load the documents of ``text`` as if read from the file ``name``.

    The C parser (libyaml, YAML 1.1) is tried first for speed; when it refuses the text, the
    pure-Python parser (YAML 1.2) decides, so a spec means the same whichever is installed.

    Args:
        pure: Use the pure-Python parser even when the C one is installed (for tests).
    """
    documents, problems, refused = _load(text, name, pure=pure)
    if refused and not pure:
        # NOTE: libyaml refuses some YAML 1.2 that the pure parser reads (`[tickets:read]`: a
        # ':' inside a flow sequence); its error messages also differ. Failing files are rare,
        # so reading them twice costs nothing and keeps messages the same for everyone.
        documents, problems, _ = _load(text, name, pure=True)
    return documents, problems


def _load(text: str, name: str, *, pure: bool) -> tuple[list[Document], list[Diagnostic], bool]:
    """The documents and problems of ``text``, and whether the parser refused it."""
    documents: list[Document] = []
    problems: list[Diagnostic] = []
    refused = True
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            for index, root in enumerate(_compose_all(text, pure=pure)):
                if root is None or (isinstance(root, ScalarNode) and str(root.tag) == _NULL):
                    continue
                builder = Builder(Locs(name, text), problems)
                data = builder.convert(root, (), None)
                documents.append(Document(data, builder.locs, index))
        refused = False
    except MarkedYAMLError as exc:
        problems.append(_syntax(exc, name, text))
    except YAMLError as exc:
        problems.append(error(Pos(name, 1, 1), "yaml-syntax", str(exc).strip()))
    except RecursionError:
        problems.append(error(Pos(name, 1, 1), "yaml-syntax", "the YAML nests too deeply"))
    return documents, problems, refused


@cache
def _shared_tag(suffix: str) -> Tag:
    return Tag(suffix=suffix)


class _Resolver(VersionedResolver):
    """ruamel's resolver, less the two exceptions it raises and catches for every plain scalar."""

    def resolve(self, kind: Any, value: Any, implicit: Any) -> Any:
        """The tag of a node, by ruamel's rules; one shared tag object per tag, as ruamel shares
        its default tags.

        NOTE: the C composer calls this for every node of every spec. ruamel's own looks the
        version's table up twice per plain scalar and makes a new tag each time, whose text
        (which the builder reads for every value) is then worked out again, character by
        character, per node.
        """
        if kind is ScalarNode and implicit[0]:
            by_first = self.versioned_resolver
            for tag, regexp in (*by_first.get(value[:1], ()), *by_first.get(None, ())):
                if regexp.match(value):
                    return _shared_tag(tag)
            implicit = implicit[1]
        if self.yaml_path_resolvers:
            return super().resolve(kind, value, (False, implicit))
        if kind is ScalarNode:
            return self.DEFAULT_SCALAR_TAG
        if kind is SequenceNode:
            return self.DEFAULT_SEQUENCE_TAG
        return self.DEFAULT_MAPPING_TAG if kind is MappingNode else None

    @property
    def processing_version(self) -> Any:
        """The YAML version to resolve by, found as ruamel finds it, in the same order.

        NOTE: ruamel asks again for every scalar, trying attributes that its C loader lacks and
        catching the AttributeErrors: about a fifth of loading a large spec directory. getattr
        with a default asks the same questions without raising.
        """
        owner = self.loadumper
        version = getattr(getattr(owner, "_scanner", None), "yaml_version", _MISSING)
        if version is _MISSING:
            if hasattr(owner, "typ"):
                version = getattr(owner, "version", None)
            else:
                version = getattr(getattr(owner, "_serializer", None), "use_version", None)
        if version is None:
            version = self._loader_version
        return _DEFAULT_YAML_VERSION if version is None else version


def _compose_all(text: str, *, pure: bool = False) -> Iterator[Node | None]:
    # NOTE: the "safe" composer uses libyaml through ruamel.yaml.clib when it is installed (about
    # six times faster than pure Python on large spec directories); both give the same nodes.
    yaml = YAML(typ="safe", pure=pure)
    yaml.Resolver = _Resolver
    yield from yaml.compose_all(text)


def _syntax(exc: MarkedYAMLError, name: str, text: str) -> Diagnostic:
    mark = exc.problem_mark or exc.context_mark
    problem = str(exc.problem or exc.context or "invalid YAML").strip()
    context = str(exc.context or "").strip()
    context_line = exc.context_mark.line + 1 if exc.context_mark is not None else 0
    line, column = (mark.line + 1, mark.column + 1) if mark is not None else (1, 1)
    moved = syntax_place(problem, context, line, context_line)
    if moved != line and exc.context_mark is not None:
        line, column = moved, exc.context_mark.column + 1
    message = problem
    if exc.context and exc.problem and context_line:
        message = f"{problem} ({context} at line {context_line})"
    hint = syntax_hint(problem, context, text, line, column)
    if hint:
        message = f"{message}: {hint}"
    return error(Pos(name, line, column), "yaml-syntax", message)
