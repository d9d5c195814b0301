"""A schema compiled to Python closures, for the question "is this valid?" before jsonschema.

Every diagnostic of the schema passes is built from ``jsonschema``'s errors (their paths, keywords
and messages), but walking every document of a large spec directory through it was most of a
check's time: it builds a validator object for every keyword it descends into. The host's own
schemas use a few keywords only, so they compile here, once, to plain functions; a document they
pass skips ``jsonschema``, and any other goes on to it for its errors.

NOTE: a compiled validator (jsonschema-rs) answers as fast, but costs every worker about 11 MB of
memory (its library and compiled schemas), over the per-worker memory target by itself.

The compiled check may only ever be stricter than ``jsonschema`` (a False just costs a slower
check), never laxer: a keyword it does not implement makes compiling fail rather than be ignored.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any, Literal

__all__ = ["QuickCheck"]

Check = Callable[[Any], bool]

# Keywords that only describe (or hold definitions for ``$ref``): no instance fails them.
# NOTE: ``format`` is here because jsonschema does not assert formats unless asked to.
_ANNOTATIONS = frozenset(
    {"$schema", "$id", "$comment", "$anchor", "$dynamicAnchor", "$vocabulary", "$defs"}
    | {"definitions", "title", "description", "default", "deprecated", "examples", "format"}
    | {"readOnly", "writeOnly"}
)


def _yes(instance: Any) -> bool:
    return True


def _no(instance: Any) -> bool:
    return False


def _is_number(x: Any) -> bool:
    return isinstance(x, int | float) and not isinstance(x, bool)


_TYPES: dict[str, Check] = {
    "object": lambda x: isinstance(x, dict),
    "array": lambda x: isinstance(x, list),
    "string": lambda x: isinstance(x, str),
    "boolean": lambda x: isinstance(x, bool),
    "null": lambda x: x is None,
    "number": _is_number,
    "integer": lambda x: _is_number(x) and (isinstance(x, int) or x.is_integer()),
}


def _same(a: Any, b: Any) -> bool:
    """JSON equality as jsonschema has it: true is not 1, 1 is 1.0, containers compare deeply."""
    if isinstance(a, bool) or isinstance(b, bool):
        return type(a) is type(b) and a == b
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(_same(a[k], b[k]) for k in a)
    if isinstance(a, list | dict) or isinstance(b, list | dict):
        return False
    return bool(a == b)


class QuickCheck:
    """One schema compiled once, asked only whether an instance certainly passes it."""

    def __init__(self, schema: Any, draft: Literal[7, 2020]) -> None:
        """Compile ``schema`` (JSON Schema draft-07 or 2020-12; local ``$ref`` only).

        Raises:
            ValueError: the schema uses a keyword (or form of one) not compiled here.
        """
        self._root = schema
        self._draft = draft
        self._refs: dict[str, Check] = {}
        self._check = self._compile(schema)

    def passes(self, instance: Any) -> bool:
        """True when ``instance`` is valid; False when it is not, or when that is not certain."""
        try:
            return self._check(instance)
        except RecursionError:
            return False

    def _compile(self, schema: Any) -> Check:
        if schema is True:
            return _yes
        if schema is False:
            return _no
        if not isinstance(schema, dict):
            raise ValueError(f"not a schema: {schema!r}")
        unknown = set(schema) - _ANNOTATIONS - set(_KEYWORDS)
        if unknown or ("$ref" in schema and self._draft == 7):
            raise ValueError(f"keywords the quick check does not compile: {sorted(unknown)}")
        checks = [
            check
            for keyword, build in _KEYWORDS.items()
            if keyword in schema and (check := build(self, schema[keyword], schema)) is not None
        ]
        if not checks:
            return _yes
        if len(checks) == 1:
            return checks[0]
        return lambda x: all(check(x) for check in checks)

    def _ref(self, ref: Any, schema: dict[str, Any]) -> Check:
        if not isinstance(ref, str) or not ref.startswith("#"):
            raise ValueError(f"only local references compile: {ref!r}")
        if ref not in self._refs:
            target: list[Check] = []
            self._refs[ref] = lambda x: target[0](x)
            node = self._root
            for part in filter(None, ref[1:].split("/")):
                node = node[part.replace("~1", "/").replace("~0", "~")]
            target.append(self._compile(node))
        return self._refs[ref]

    def _type(self, names: Any, schema: dict[str, Any]) -> Check:
        listed = [names] if isinstance(names, str) else names
        if any(name not in _TYPES for name in listed):
            raise ValueError(f"not a JSON Schema type: {names!r}")
        tests = [_TYPES[name] for name in listed]
        return tests[0] if len(tests) == 1 else lambda x: any(test(x) for test in tests)

    def _properties(self, properties: dict[str, Any], schema: dict[str, Any]) -> Check:
        """``properties`` and ``additionalProperties`` together: one pass over the members."""
        if "patternProperties" in schema:
            raise ValueError("patternProperties does not compile")
        checks = {key: self._compile(sub) for key, sub in properties.items()}
        extra = (
            self._compile(schema["additionalProperties"])
            if "additionalProperties" in schema
            else None
        )

        def members(x: Any) -> bool:
            if not isinstance(x, dict):
                return True
            for key, value in x.items():
                check = checks.get(key, extra)
                if check is not None and not check(value):
                    return False
            return True

        return members

    def _additional(self, sub: Any, schema: dict[str, Any]) -> Check | None:
        if "properties" in schema:
            return None  # NOTE: checked with the properties, in the same pass
        return self._properties({}, schema)

    def _required(self, keys: list[str], schema: dict[str, Any]) -> Check:
        return lambda x: not isinstance(x, dict) or all(key in x for key in keys)

    def _property_names(self, sub: Any, schema: dict[str, Any]) -> Check:
        check = self._compile(sub)
        return lambda x: not isinstance(x, dict) or all(check(key) for key in x)

    def _min_properties(self, least: int, schema: dict[str, Any]) -> Check:
        return lambda x: not isinstance(x, dict) or len(x) >= least

    def _items(self, sub: Any, schema: dict[str, Any]) -> Check:
        if isinstance(sub, list) or "prefixItems" in schema:
            raise ValueError("items in tuple form does not compile")
        check = self._compile(sub)
        return lambda x: not isinstance(x, list) or all(check(item) for item in x)

    def _min_items(self, least: int, schema: dict[str, Any]) -> Check:
        return lambda x: not isinstance(x, list) or len(x) >= least

    def _unique(self, unique: bool, schema: dict[str, Any]) -> Check | None:
        if not unique:
            return None
        return lambda x: (
            not isinstance(x, list)
            or not any(_same(a, b) for i, a in enumerate(x) for b in x[i + 1 :])
        )

    def _enum(self, options: list[Any], schema: dict[str, Any]) -> Check:
        if all(isinstance(option, str) for option in options):
            texts = frozenset(options)  # NOTE: only text equals text: the usual enum, by hash
            return lambda x: isinstance(x, str) and x in texts
        return lambda x: any(_same(x, option) for option in options)

    def _const(self, value: Any, schema: dict[str, Any]) -> Check:
        return lambda x: _same(x, value)

    def _pattern(self, pattern: str, schema: dict[str, Any]) -> Check:
        # NOTE: jsonschema calls re.search with the same pattern: the same answers, compiled once.
        search = re.compile(pattern).search
        return lambda x: not isinstance(x, str) or search(x) is not None

    def _minimum(self, least: Any, schema: dict[str, Any]) -> Check:
        return lambda x: not _is_number(x) or not x < least

    def _exclusive_minimum(self, least: Any, schema: dict[str, Any]) -> Check:
        return lambda x: not _is_number(x) or not x <= least

    def _all_of(self, subs: list[Any], schema: dict[str, Any]) -> Check:
        checks = [self._compile(sub) for sub in subs]
        return lambda x: all(check(x) for check in checks)

    def _any_of(self, subs: list[Any], schema: dict[str, Any]) -> Check:
        checks = [self._compile(sub) for sub in subs]
        return lambda x: any(check(x) for check in checks)

    def _if(self, sub: Any, schema: dict[str, Any]) -> Check | None:
        if "then" not in schema and "else" not in schema:
            return None
        test = self._compile(sub)
        then = self._compile(schema.get("then", True))
        otherwise = self._compile(schema.get("else", True))
        return lambda x: then(x) if test(x) else otherwise(x)


_Build = Callable[[QuickCheck, Any, dict[str, Any]], Check | None]

# NOTE: the cheap type test first; `then`/`else` are compiled by `if` (alone they do nothing).
_KEYWORDS: dict[str, _Build] = {
    "type": QuickCheck._type,
    "enum": QuickCheck._enum,
    "const": QuickCheck._const,
    "pattern": QuickCheck._pattern,
    "minimum": QuickCheck._minimum,
    "exclusiveMinimum": QuickCheck._exclusive_minimum,
    "required": QuickCheck._required,
    "minProperties": QuickCheck._min_properties,
    "minItems": QuickCheck._min_items,
    "uniqueItems": QuickCheck._unique,
    "propertyNames": QuickCheck._property_names,
    "properties": QuickCheck._properties,
    "additionalProperties": QuickCheck._additional,
    "items": QuickCheck._items,
    "$ref": QuickCheck._ref,
    "allOf": QuickCheck._all_of,
    "anyOf": QuickCheck._any_of,
    "if": QuickCheck._if,
    "then": lambda quick, sub, schema: None,
    "else": lambda quick, sub, schema: None,
}
