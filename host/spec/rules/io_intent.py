"""Input and output schemas that are valid JSON Schema but do not say what the author meant.

JSON Schema ignores keywords it does not know and lets ``required`` name any property, so a key
indented one level too little (``id:`` beside ``properties:`` instead of under it) or a typo in
``required`` passes the meta-schema and then rejects every call. Both are caught here, at the line
that holds the mistake.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import replace
from functools import cache
from typing import Any
from urllib.parse import urljoin

from jsonschema import Draft202012Validator
from jsonschema_specifications import REGISTRY  # type: ignore[import-untyped]

from host.spec.build import ToolDoc
from host.spec.diagnostics import Diagnostic
from host.spec.rulebook import did_you_mean, error
from host.spec.rules.facts import ToolFacts
from host.spec.yaml import YPath

__all__ = [
    "check_io_intent",
    "misplaced_properties",
    "schema_keywords",
    "with_misplaced_properties",
]

# Keywords whose value is one schema, a list of schemas, or a mapping of names to schemas.
_ONE = ("items", "not", "if", "then", "else", "contains", "additionalProperties", "propertyNames")
_LIST = ("allOf", "anyOf", "oneOf", "prefixItems")
_MAP = ("properties", "patternProperties", "$defs", "definitions", "dependentSchemas")
_APPLICATORS = frozenset({"allOf", "anyOf", "oneOf", "not", "if", "then", "else"})
_APPLICATORS |= {"dependentSchemas"}
# Keywords that let an object hold properties that `properties` does not list.
_OPEN = ("patternProperties", "$ref", "$dynamicRef", "dependentSchemas", "unevaluatedProperties")


@cache
def _keywords() -> frozenset[str]:
    """Every keyword of the JSON Schema 2020-12 vocabularies (and the two legacy ones it keeps)."""
    top = Draft202012Validator.META_SCHEMA
    names = set(top["properties"])
    for part in top["allOf"]:
        names |= set(REGISTRY.contents(urljoin(top["$id"], part["$ref"]))["properties"])
    return frozenset(names)


def schema_keywords() -> frozenset[str]:
    """Every keyword JSON Schema 2020-12 knows."""
    return _keywords()


def check_io_intent(facts: ToolFacts) -> list[Diagnostic]:
    """Unknown keywords (``json-schema``) and ``required`` names without a property."""
    doc = facts.doc
    found: list[Diagnostic] = []
    for key in ("input", "output"):
        for path, schema in _schemas(doc.data.get(key), (key,)):
            found.extend(_unknown_keywords(doc, path, schema))
            # NOTE: a `required` inside allOf, if/then/else, ... speaks of the object around it.
            if not _APPLICATORS.intersection(p for p in path if isinstance(p, str)):
                found.extend(_required(doc, key, path, schema))
    return found


def misplaced_properties(schema: Any) -> dict[str, Any]:
    """Keys beside ``properties:`` that look like properties indented one level too little."""
    if not isinstance(schema, dict) or not isinstance(schema.get("properties"), dict):
        return {}
    return {
        key: value
        for key, value in schema.items()
        if isinstance(value, dict) and key not in _keywords() and not key.startswith(("x-", "$"))
    }


def with_misplaced_properties(doc: ToolDoc) -> ToolDoc:
    """``doc`` as if its misplaced input properties were indented under ``properties:``.

    NOTE: the json-schema error at the misplaced key is the one cause; checked as written, every
    use of the property (templates, handler parameters, remember keys) would be a knock-on error.
    """
    misplaced = misplaced_properties(doc.tool.input)
    if not misplaced:
        return doc
    schema = {k: v for k, v in doc.tool.input.items() if k not in misplaced}
    schema["properties"] = {**schema["properties"], **misplaced}
    return replace(doc, tool=replace(doc.tool, input=schema))


def _schemas(schema: Any, path: YPath) -> Iterator[tuple[YPath, dict[str, Any]]]:
    """Every schema object inside ``schema`` (itself included), with its path."""
    if not isinstance(schema, dict):
        return
    yield path, schema
    for key in _ONE:
        yield from _schemas(schema.get(key), (*path, key))
    for key in _LIST:
        items = schema.get(key)
        if isinstance(items, list):
            for i, item in enumerate(items):
                yield from _schemas(item, (*path, key, i))
    for key in _MAP:
        named = schema.get(key)
        if isinstance(named, dict):
            for name, item in named.items():
                yield from _schemas(item, (*path, key, name))


def _unknown_keywords(doc: ToolDoc, path: YPath, schema: dict[str, Any]) -> list[Diagnostic]:
    found = []
    for key, value in schema.items():
        if key in _keywords() or key.startswith(("x-", "$")):
            continue
        hint = did_you_mean(key, _keywords())
        if isinstance(value, dict) and "properties" in schema:
            fix = f"if '{key}' is a property, indent it under properties:"
        elif hint:
            fix = f"fix the spelling.{hint}"
        else:
            fix = "remove it, or prefix a custom annotation with x- (like x-order)"
        found.append(
            error(
                doc.locs.key((*path, key)),
                "json-schema",
                f"'{key}' is not a JSON Schema keyword, so it would be ignored; {fix}",
            )
        )
    return found


def _required(doc: ToolDoc, key: str, path: YPath, schema: dict[str, Any]) -> list[Diagnostic]:
    required = schema.get("required")
    if not isinstance(required, list) or any(k in schema for k in _OPEN):
        return []
    if isinstance(schema.get("additionalProperties"), dict):
        return []
    if path == (key,) and "properties" not in schema and key == "output":
        return []
    properties = _declared(schema) | set(misplaced_properties(schema))
    found = []
    for index, name in enumerate(required):
        if not isinstance(name, str) or name in properties:
            continue
        hint = did_you_mean(name, properties) or f" Add {name} under properties:, or remove it."
        if key == "input":
            effect = "every call would be rejected (the model sends the properties it is shown)"
        else:
            effect = "every result must carry it although the schema never describes it"
        found.append(
            error(
                doc.locs.value((*path, "required", index)),
                "schema-required",
                f"required names '{name}', which properties does not have: {effect}.{hint}",
            )
        )
    return found


def _declared(schema: dict[str, Any]) -> set[str]:
    """The property names a schema declares, its applicators' (``allOf``, ``then``...) included."""
    names = set(schema["properties"]) if isinstance(schema.get("properties"), dict) else set()
    for key in ("allOf", "anyOf", "oneOf"):
        for part in schema.get(key) or []:
            if isinstance(part, dict):
                names |= _declared(part)
    for key in ("if", "then", "else"):
        if isinstance(schema.get(key), dict):
            names |= _declared(schema[key])
    return names
