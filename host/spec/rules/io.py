"""Input and output: valid JSON Schema (2020-12, per its meta-schema), of type object; headers."""

from __future__ import annotations

from functools import cache
from typing import Any
from urllib.parse import urljoin

from jsonschema import Draft202012Validator
from jsonschema_specifications import REGISTRY  # type: ignore[import-untyped]

from host.spec.build import ToolDoc
from host.spec.diagnostics import Diagnostic
from host.spec.param_headers import X_MCP_HEADER, find_annotations
from host.spec.quick import QuickCheck
from host.spec.rulebook import did_you_mean, error
from host.spec.rules.facts import ToolFacts
from host.spec.rules.io_intent import schema_keywords

__all__ = ["check_io"]

_TYPES = ("array", "boolean", "integer", "null", "number", "object", "string")


@cache
def _meta() -> Draft202012Validator:
    return Draft202012Validator(Draft202012Validator.META_SCHEMA)


@cache
def _quick_meta() -> QuickCheck:
    """The 2020-12 meta-schema as one document, ``$dynamicRef: "#meta"`` made a plain ``$ref``.

    NOTE: the same constraints without dynamic scopes, compiled (:mod:`host.spec.quick`); it only
    answers "valid?". Errors always come from the official meta-schema, so messages stay canonical.
    """
    top = Draft202012Validator.META_SCHEMA
    definitions: dict[str, Any] = {}
    blocks: list[dict[str, Any]] = []
    for part in top["allOf"]:
        vocabulary = REGISTRY.contents(urljoin(top["$id"], part["$ref"]))
        definitions.update(vocabulary.get("$defs", {}))
        blocks.append({"properties": vocabulary["properties"]})
    blocks.append({"properties": top["properties"]})
    definitions["meta"] = {"type": ["object", "boolean"], "allOf": blocks}
    return QuickCheck(_local({"$defs": definitions, "$ref": "#/$defs/meta"}), 2020)


def _local(node: Any) -> Any:
    if isinstance(node, dict):
        if node.get("$dynamicRef") == "#meta":
            return {"$ref": "#/$defs/meta"}
        ref = node.get("$ref")
        if isinstance(ref, str) and "#" in ref:
            node = {**node, "$ref": "#" + ref.split("#", 1)[1]}
        return {k: _local(v) for k, v in node.items()}
    if isinstance(node, list):
        return [_local(item) for item in node]
    return node


def check_io(facts: ToolFacts) -> list[Diagnostic]:
    """``json-schema``, ``schema-type``, ``content-output``, and ``mcp-header`` for ``input``."""
    doc = facts.doc
    found: list[Diagnostic] = _content_output(doc) + _headers(doc)
    for key in ("input", "output"):
        written = doc.data.get(key)
        if not isinstance(written, dict):
            continue
        errors = [] if _quick_meta().passes(written) else _meta().iter_errors(written)
        slipped = _slipped(written.get("properties"))
        knock_ons = {name for names in slipped.values() for name in names}
        for err in errors:
            path = (key, *err.absolute_path)
            if len(path) > 2 and path[1] == "properties" and path[2] in knock_ons:
                continue  # NOTE: a keyword that slipped out of the empty property above it
            message = _message(key, path, err)
            if len(path) == 3 and path[1] == "properties" and path[2] in slipped:
                message = _empty_above(path, slipped[str(path[2])])
            found.append(error(doc.locs.value(path), "json-schema", message))
        kind = written.get("type", "object")
        if kind != "object":
            found.append(
                error(
                    doc.locs.value((key, "type")),
                    "schema-type",
                    f"{key} must be a schema of type: object (MCP sends the arguments and "
                    f"structured results as objects), not {kind!r}; leave type out or write object",
                )
            )
    return found


def _content_output(doc: ToolDoc) -> list[Diagnostic]:
    act = doc.tool.act
    if act is None or act.returns != "content" or doc.tool.output is None:
        return []
    index = doc.tool.steps.index(act)
    # NOTE: MCP requires a structured result that fits the outputSchema of a tool that declares
    # one, and clients (the SDKs) reject a result without it; content blocks carry none.
    return [
        error(
            doc.locs.value(("steps", index, "returns")),
            "content-output",
            f"'{doc.tool.name}' declares output: (an outputSchema, so every result must carry "
            "structured content) but its act returns content blocks, which carry none; remove "
            "output:, or drop returns: content and return a mapping",
        )
    ]


def _headers(doc: ToolDoc) -> list[Diagnostic]:
    """Every invalid ``x-mcp-header`` annotation of ``input`` (SEP-2243 custom headers)."""
    return [
        error(doc.locs.value(("input", *found.where, X_MCP_HEADER)), "mcp-header", found.problem)
        for found in find_annotations(doc.data.get("input"))
        if found.problem is not None
    ]


def _slipped(properties: Any) -> dict[str, list[str]]:
    """Empty properties followed by keywords indented like them (``id:`` then ``type: string``).

    NOTE: one line indented two spaces too little makes its property empty and the keyword a
    property of its own; both are reported at the empty one, where the fix is.
    """
    if not isinstance(properties, dict):
        return {}
    found: dict[str, list[str]] = {}
    empty: str | None = None
    for name, value in properties.items():
        if value is None:
            empty = name
            found[name] = []
        elif empty is not None and name in schema_keywords() and not isinstance(value, dict):
            found[empty].append(name)
        else:
            empty = None
    return {name: keys for name, keys in found.items() if keys}


def _empty_above(path: tuple[Any, ...], keys: list[str]) -> str:
    where = ".".join(str(p) for p in path)
    listed = ", ".join(f"{k}:" for k in keys)
    below = "on the line below is" if len(keys) == 1 else "on the lines below are"
    reads = "it reads as another property" if len(keys) == 1 else "they read as other properties"
    return (
        f"{where} is empty, and {listed} {below} indented like it, so {reads}: indent "
        f"{listed} two more spaces, under {path[-1]}:"
    )


def _message(key: str, path: tuple[Any, ...], err: Any) -> str:
    where = ".".join(str(p) for p in path)
    value = err.instance
    if path[-1] == "type" and isinstance(value, str | list):
        words = [value] if isinstance(value, str) else [v for v in value if isinstance(v, str)]
        wrong = next((w for w in words if w not in _TYPES), str(value))
        return (
            f"{where}: '{wrong}' is not a JSON Schema type; use one of: {', '.join(_TYPES)}."
            f"{did_you_mean(wrong, _TYPES)}"
        )
    fix = ""
    if err.validator == "type" and value is None:
        return f"{where} is empty; write what belongs to it, indented under it"
    if err.validator == "type" and isinstance(err.validator_value, str):
        fix = f"; write {_A.get(err.validator_value, err.validator_value)} there"
    elif err.validator in ("minimum", "minItems", "minLength", "minProperties"):
        fix = "; write a number that is allowed there"
    return f"{where} is not valid JSON Schema (2020-12): {err.message}{fix or '; fix that keyword'}"


_A = {
    "number": "a number (without quotes)",
    "integer": "a whole number (without quotes)",
    "string": "text",
    "array": "a list",
    "object": "a mapping",
    "boolean": "true or false",
}
