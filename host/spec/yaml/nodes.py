"""Turn one composed YAML node graph into plain data, recording where every value was written.

Besides positions, this is where the mistakes that YAML accepts silently are caught, because only
the node graph still shows how a value was written: a duplicate key (two documents missing their
``---``, two steps missing a ``- ``), a value that begins with ``{{`` and so became a mapping, and
a ``{...}`` entry with no value because a comma in the text above ended it.
"""

from __future__ import annotations

import math
import re
import sys
from typing import Any

from ruamel.yaml.nodes import MappingNode, Node, ScalarNode, SequenceNode

from host.spec.diagnostics import Diagnostic
from host.spec.model import STEP_KINDS, Pos
from host.spec.rulebook import error
from host.spec.yaml.hints import quoted
from host.spec.yaml.positions import Locs, YPath

__all__ = ["Builder"]

_CORE = "tag:yaml.org,2002:"
_STR, _NULL, _BOOL, _INT, _FLOAT, _MERGE = (
    _CORE + kind for kind in ("str", "null", "bool", "int", "float", "merge")
)
_DECIMAL = re.compile(r"^[-+]?[0-9][0-9_]*$")


def _pos(name: str, mark: Any) -> Pos:
    return Pos(name, mark.line + 1, mark.column + 1)


def _implicit_null(node: Node) -> bool:
    """True for a value that was not written at all (``{a, b}``: ``b`` has no ``: value``)."""
    # NOTE: the cheap test first: this runs for every value of every spec.
    return (
        node.start_mark.index == node.end_mark.index
        and isinstance(node, ScalarNode)
        and node.value == ""
        and str(node.tag) == _NULL
    )


#: The longest text interned: a description is seldom written twice.
_SHORT = 64


class Builder:
    """Turns one node graph into plain data, filling ``locs`` and reporting what YAML hides."""

    def __init__(self, locs: Locs, problems: list[Diagnostic]) -> None:
        self.locs = locs
        self.problems = problems
        self.active: set[int] = set()

    def convert(self, node: Node, path: YPath, key: Any, key_end: Any = None) -> Any:
        """The plain value of ``node``, written at ``path``.

        Args:
            key: The start mark of the key it is the value of (None for items and the root).
            key_end: The end mark of that key.
        """
        key_line, key_column = (key.line + 1, key.column + 1) if key is not None else (0, 0)
        start = node.start_mark
        if key_end is not None and _implicit_null(node):
            line, column, index = self._after_colon(key_end)
            self.locs.table[path] = (key_line, key_column, line, column, index, index)
        else:
            self.locs.table[path] = (
                key_line,
                key_column,
                start.line + 1,
                start.column + 1,
                start.index,
                node.end_mark.index,
            )
        # NOTE: most nodes are scalars, which hold no other node (so no alias loop): first.
        if isinstance(node, ScalarNode):
            return self._scalar(node)
        if id(node) in self.active:
            self.problems.append(
                error(_pos(self.locs.file, start), "yaml-syntax", "an alias refers to itself")
            )
            return None
        self.active.add(id(node))
        try:
            if isinstance(node, MappingNode):
                if self.locs.text.startswith("{{", start.index):
                    return self._template(node, path)
                return self._mapping(node, path)
            if isinstance(node, SequenceNode):
                return [self.convert(item, (*path, i), None) for i, item in enumerate(node.value)]
            return self._scalar(node)
        finally:
            self.active.discard(id(node))

    def _after_colon(self, key_end: Any) -> tuple[int, int, int]:
        """Where a value left empty is: just after its key's colon.

        NOTE: the C and pure-Python parsers place an empty value differently (after the colon,
        or at the next token, even on the next line); one place keeps positions parser-free.
        """
        colon = self.locs.text.find(":", key_end.index)
        offset = colon + 1 - key_end.index if colon >= 0 else 0
        return key_end.line + 1, key_end.column + offset + 1, key_end.index + offset

    def _template(self, node: MappingNode, path: YPath) -> str:
        """A value written ``{{ ... }}`` without quotes: YAML made it a mapping; keep the text.

        NOTE: reported once, here, and kept as the text the author meant, so that no knock-on
        error (a mapping where text belongs) follows. A ``when:`` is left to the template check,
        which says that ``when:`` takes no ``{{ }}`` at all.
        """
        text = self.locs.text[node.start_mark.index : node.end_mark.index]
        if path[-1:] != ("when",):
            key = path[-1] if path else "value"
            self.problems.append(
                error(
                    _pos(self.locs.file, node.start_mark),
                    "yaml-syntax",
                    f"a value that starts with '{{{{' is read by YAML as a mapping, not a "
                    f"template; quote it: {key}: {quoted(text)}",
                )
            )
        return text

    def _mapping(self, node: MappingNode, path: YPath) -> dict[str, Any]:
        file = self.locs.file
        result: dict[str, Any] = {}
        pairs = node.value
        tags = [str(key_node.tag) for key_node, _ in pairs]
        # NOTE: merged keys ('<<: *base') go in first so that explicit keys override them.
        if _MERGE in tags:
            for (_, value_node), tag in zip(pairs, tags, strict=True):
                if tag != _MERGE:
                    continue
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
        previous: str | None = None
        previous_node: Node | None = None
        merged = False
        flow = node.flow_style
        for (key_node, value_node), tag in zip(pairs, tags, strict=True):
            mark = key_node.start_mark
            if tag == _MERGE:
                continue
            if not isinstance(key_node, ScalarNode):
                self.problems.append(
                    error(
                        _pos(file, mark),
                        "wrong-type",
                        "a key must be plain text, not a list or mapping; quote a key that "
                        "starts with '{' or '['",
                    )
                )
                continue
            if merged:
                continue  # NOTE: the rest belongs to the next document (or step), not this one
            # NOTE: interned: a worker keeps every tool's spec, whose keys repeat in every tool.
            key = sys.intern(str(key_node.value))
            if flow and previous is not None and _implicit_null(value_node):
                text = str(previous_node.value) if isinstance(previous_node, ScalarNode) else ""
                self.problems.append(_comma(file, mark, key, previous, text))
            previous = key
            previous_node = value_node
            if key in first:
                self.problems.append(_duplicate(file, mark, key, first[key], path))
                # NOTE: after a second `kind` (or a second step kind), every key is the next
                # document's (or step's): one diagnostic says it all.
                merged = _starts_another(key, path)
                continue
            first[key] = mark.line + 1
            result[key] = self.convert(value_node, (*path, key), mark, key_node.end_mark)
        return result

    def _scalar(self, node: Node) -> Any:
        tag = str(node.tag)
        text = str(node.value)
        if tag == _STR:
            # NOTE: short texts (types, names, scopes) repeat across tools too: one copy each.
            return sys.intern(text) if len(text) <= _SHORT else text
        if tag == _NULL:
            return None
        if tag == _BOOL:
            return text.lower() == "true"
        if tag == _INT:
            return _int(text)
        if tag == _FLOAT:
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


def _starts_another(key: str, path: YPath) -> bool:
    """True when a repeated ``key`` shows that two documents or two steps ran together."""
    return (not path and key == "kind") or (
        len(path) == 2 and path[0] == "steps" and key in STEP_KINDS
    )


def _duplicate(file: str, mark: Any, key: str, first: int, path: YPath) -> Diagnostic:
    """A repeated key, with the fix its place suggests."""
    where = _pos(file, mark)
    if not path and _starts_another(key, path):
        return error(
            where,
            "duplicate-key",
            f"a second 'kind' in one document (the first is on line {first}): a new document "
            f"starts here; put '---' on its own line before line {where.line}",
        )
    if _starts_another(key, path):
        return error(
            where,
            "duplicate-key",
            f"a second '{key}' in one step (the first is on line {first}): a missing '- ' merged "
            f"two steps; write '- {key}: ...' to start a new step here",
        )
    return error(
        where,
        "duplicate-key",
        f"duplicate key '{key}' (first defined at line {first}); YAML would keep only one: "
        "delete one of them or rename it",
    )


def _comma(file: str, mark: Any, key: str, previous: str, text: str) -> Diagnostic:
    return error(
        _pos(file, mark),
        "yaml-syntax",
        f"'{key}' has no value: inside {{...}} a ',' ends a value, so the text of '{previous}' "
        f"stopped at the comma before '{key}'; quote the text that contains the comma: "
        f"{previous}: {quoted(f'{text}, {key}')}",
    )


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
