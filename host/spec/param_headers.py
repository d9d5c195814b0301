"""``x-mcp-header`` in an input schema: where each annotation sits, and whether it is valid.

The modern MCP revision (SEP-2243) lets a tool mirror an argument into an HTTP header: a property
of the input schema that carries ``"x-mcp-header": "Region"`` is sent by clients, over HTTP, as the
header ``Mcp-Param-Region`` too, so that proxies and load balancers can route on it without reading
the body; the server checks that the header and the body agree. The annotation is valid only on a
property of type ``string``, ``integer`` or ``boolean`` reached from the top of the schema through
``properties`` alone, with a name that is an HTTP field-name token, unique among the tool's
annotations ignoring case. Clients drop a tool whose annotations break these rules, so the
validator reports them (rule ``mcp-header``) and the server ignores them.

This module only reads schemas: the validator turns problems into diagnostics, the protocol layer
checks headers against the valid annotations.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

__all__ = ["HEADER_TYPES", "X_MCP_HEADER", "Annotation", "find_annotations"]

X_MCP_HEADER = "x-mcp-header"

#: The property types a header may mirror (``number`` is excluded: float text is not portable).
HEADER_TYPES = ("string", "integer", "boolean")

# RFC 9110 section 5.6.2: a field name is one or more "tchar".
_TOKEN = re.compile(r"[!#$%&'*+.^_`|~0-9A-Za-z-]+")

# Keywords whose value is one subschema, a list of subschemas, or a mapping of named subschemas.
# Crossing any of them leaves the chain of plain ``properties`` keys a header must sit on.
# Instance-data keywords (default, const, enum, examples) are never entered.
_ONE = frozenset(
    {
        "items",
        "additionalItems",
        "contains",
        "unevaluatedItems",
        "additionalProperties",
        "unevaluatedProperties",
        "propertyNames",
        "not",
        "if",
        "then",
        "else",
        "contentSchema",
    }
)
_MANY = frozenset({"allOf", "anyOf", "oneOf", "prefixItems"})
_NAMED = frozenset({"patternProperties", "dependentSchemas", "$defs", "definitions"})

Where = tuple[str | int, ...]


@dataclass(frozen=True)
class Annotation:
    """One ``x-mcp-header`` found in a schema.

    Attributes:
        where: The path, inside the schema, of the schema that carries it.
        path: The argument it mirrors: the ``properties`` keys from the top of the schema, or
            None when it is not reached through ``properties`` alone.
        name: The annotation's value: the ``NAME`` of ``Mcp-Param-NAME`` when valid.
        type: The annotated property's ``type``.
        problem: Why the annotation is invalid, or None when it is valid.
    """

    where: Where
    path: tuple[str, ...] | None
    name: Any
    type: Any
    problem: str | None = None


def find_annotations(schema: Any) -> list[Annotation]:
    """Every ``x-mcp-header`` in ``schema``, in document order, each with its problem (if any)."""
    found: list[Annotation] = []
    seen: dict[str, str] = {}
    for where, path, node in _positions(schema):
        if X_MCP_HEADER not in node:
            continue
        name, kind = node[X_MCP_HEADER], node.get("type")
        problem = _problem(path, name, kind)
        if problem is None and isinstance(name, str) and path:
            argument = ".".join(path)
            other = seen.setdefault(name.lower(), argument)
            if other != argument:
                problem = (
                    f"the header name {name!r} is already used by the argument {other!r}; "
                    "header names are compared ignoring case, so give each argument its own"
                )
        found.append(Annotation(where, path, name, kind, problem))
    return found


def _problem(path: tuple[str, ...] | None, name: Any, kind: Any) -> str | None:
    if path == ():
        return (
            f"{X_MCP_HEADER} belongs on one property of input (the argument to mirror into a "
            "header), not on input itself: move it onto that property"
        )
    if path is None:
        return (
            f"{X_MCP_HEADER} must be on a property reached from the top of input through "
            "`properties` only, not under items, allOf/anyOf/oneOf, not, if/then/else, "
            "additionalProperties or $defs: clients cannot find the argument it mirrors there; "
            "move it to a property of input's own properties"
        )
    argument = ".".join(path)
    if not isinstance(name, str):
        return (
            f"{X_MCP_HEADER} of {argument!r} must be a text, the NAME of the Mcp-Param-NAME "
            f"header, not {type(name).__name__}"
        )
    if not _TOKEN.fullmatch(name):
        return (
            f"{name!r} is not a valid header name: use letters, digits and - (also "
            "! # $ % & ' * + . ^ _ ` | ~), without spaces, like Region"
        )
    if kind not in HEADER_TYPES:
        shown = "no type" if kind is None else f"type {kind!r}"
        return (
            f"{X_MCP_HEADER} is only allowed on a property of type string, integer or boolean "
            f"(one type, written as a text); {argument!r} has {shown}: give it one of those "
            f"types, or remove {X_MCP_HEADER}"
        )
    return None


def _positions(schema: Any) -> Iterator[tuple[Where, tuple[str, ...] | None, dict[str, Any]]]:
    """Every subschema with its path in the schema and its ``properties`` chain (or None)."""
    stack: list[tuple[Where, tuple[str, ...] | None, Any]] = [((), (), schema)]
    while stack:
        where, path, node = stack.pop()
        if not isinstance(node, dict):
            continue
        yield where, path, node
        children: list[tuple[Where, tuple[str, ...] | None, Any]] = []
        for key, value in node.items():
            if key == "properties" and isinstance(value, dict):
                children.extend(
                    ((*where, key, name), None if path is None else (*path, name), sub)
                    for name, sub in value.items()
                )
            elif key in _ONE:
                children.append(((*where, key), None, value))
            elif key in _MANY and isinstance(value, list):
                children.extend(((*where, key, i), None, sub) for i, sub in enumerate(value))
            elif key in _NAMED and isinstance(value, dict):
                children.extend(((*where, key, name), None, sub) for name, sub in value.items())
        # NOTE: reversed onto the stack, so annotations come out in the order they are written.
        stack.extend(reversed(children))
