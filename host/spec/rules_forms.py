"""Forms: only what MCP clients can render, and never a secret.

The schema pass already limits a field to MCP's keywords and types; here each keyword is checked
against the field's type (``minLength`` only on strings, ...), choices and defaults are checked for
shape, and fields that ask for secrets are refused (MCP forbids them in form mode).
"""

from __future__ import annotations

import re
from typing import Any

from host.spec.build import ToolDoc
from host.spec.diagnostics import Diagnostic
from host.spec.load import Locs, YPath
from host.spec.model import Ask, FormField
from host.spec.rules import error, one_of
from host.spec.schema import FORM_COMMON, FORM_KEYWORDS
from host.spec.templates import is_template

__all__ = ["asks_for_secret", "check_forms"]

_SECRET = re.compile(
    r"\b(password|passwd|passphrase|passcode|secret|token|api ?key|apikey|access ?key"
    r"|private ?key|credentials?|(credit|debit|bank) ?card|card ?(number|no)|cvv|cvc"
    r"|security ?code|pin ?(code|number)|ssn|social security|iban"
    r"|one ?time ?(code|password)|otp)\b"
)
_KNOWN = frozenset().union(*FORM_KEYWORDS.values())
_CAMEL = re.compile(r"(?<=[a-z0-9])(?=[A-Z])")


def asks_for_secret(*texts: str | None) -> str | None:
    """The secret-like phrase in a field's name, title or description, if any."""
    for text in texts:
        if not text:
            continue
        words = _CAMEL.sub(" ", text).replace("_", " ").replace("-", " ").lower()
        match = _SECRET.search(words)
        if match:
            return match[0]
    return None


def check_forms(doc: ToolDoc) -> list[Diagnostic]:
    """``form-keyword``, ``form-secret`` and ``form-fill`` for every ask's fields."""
    found: list[Diagnostic] = []
    inputs = doc.tool.input.get("properties")
    input_names = set(inputs) if isinstance(inputs, dict) else set()
    for index, step in enumerate(doc.tool.steps):
        if not isinstance(step, Ask):
            continue
        for field in step.fields:
            path: YPath = ("steps", index, "form", field.name)
            found.extend(_field(field, path, doc.locs))
            if field.name in input_names and step.when is None:
                found.append(
                    error(
                        field.pos,
                        "form-fill",
                        f"form field '{field.name}' has the name of an input field; an answer may "
                        f"only fill an input under a when: add `when: {field.name} is undefined` "
                        "to the ask, or rename the field",
                    )
                )
    return found


def _field(field: FormField, path: YPath, locs: Locs) -> list[Diagnostic]:
    schema = field.schema
    kind = schema["type"]
    if not isinstance(kind, str) or kind not in FORM_KEYWORDS:
        return []  # NOTE: the schema pass reported the type (form-type)
    found: list[Diagnostic] = []
    allowed = FORM_KEYWORDS[kind] | FORM_COMMON
    for key in schema:
        # NOTE: keywords MCP never allows were reported by the schema pass; here only misuse.
        if key not in allowed and key in _KNOWN:
            found.append(
                error(
                    locs.key((*path, key)),
                    "form-keyword",
                    f"'{key}' does not apply to {_a(kind)} field; it may use: {one_of(allowed)}",
                )
            )
    if kind == "string":
        found.extend(_choices(schema, path, locs))
    if kind == "array":
        found.extend(_items(schema, path, locs))
    for low, high in (("minLength", "maxLength"), ("minimum", "maximum"), ("minItems", "maxItems")):
        bounds = (schema.get(low), schema.get(high))
        if all(isinstance(b, int | float) for b in bounds) and schema[low] > schema[high]:
            found.append(
                error(locs.value((*path, low)), "form-keyword", f"{low} is more than {high}")
            )
    if "default" in schema and not _fits(schema["default"], schema):
        found.append(
            error(
                locs.value((*path, "default")),
                "form-keyword",
                f"default {schema['default']!r} is not a valid {kind} answer for this field",
            )
        )
    if kind == "string" and "enum" not in schema and "oneOf" not in schema:
        secret = asks_for_secret(field.name, schema.get("title"), schema.get("description"))
        if secret:
            found.append(
                error(
                    field.pos,
                    "form-secret",
                    f"form field '{field.name}' asks for a secret ({secret}): MCP forbids "
                    "passwords, tokens, API keys and payment data in forms; let the handler "
                    "read it from its environment instead",
                )
            )
    return found


def _a(kind: str) -> str:
    return f"an {kind}" if kind[0] in "aeiou" else f"a {kind}"


def _choices(schema: dict[str, Any], path: YPath, locs: Locs) -> list[Diagnostic]:
    found: list[Diagnostic] = []
    if "enum" in schema and "oneOf" in schema:
        found.append(
            error(locs.key((*path, "oneOf")), "form-keyword", "use either enum or oneOf, not both")
        )
    found.extend(_template_options(schema.get("enum"), (*path, "enum"), locs))
    names = schema.get("enumNames")
    if names is not None:
        options = schema.get("enum")
        if options is None:
            found.append(
                error(locs.key((*path, "enumNames")), "form-keyword", "enumNames needs enum")
            )
        elif isinstance(options, list) and len(options) != len(names):
            found.append(
                error(
                    locs.value((*path, "enumNames")),
                    "form-keyword",
                    f"enumNames has {len(names)} names for {len(options)} enum values",
                )
            )
    return found


def _items(schema: dict[str, Any], path: YPath, locs: Locs) -> list[Diagnostic]:
    items = schema.get("items")
    shape = "items: {type: string, enum: [...]} or items: {anyOf: [{const, title}, ...]}"
    if items is None:
        return [error(locs.key(path), "form-keyword", f"a multi-select needs {shape}")]
    where = (*path, "items")
    if ("enum" in items) == ("anyOf" in items):
        return [error(locs.value(where), "form-keyword", f"a multi-select's items are {shape}")]
    if "enum" in items and "type" not in items:
        return [error(locs.value(where), "form-keyword", "add type: string to the items")]
    return _template_options(items.get("enum"), (*where, "enum"), locs)


def _template_options(options: Any, path: YPath, locs: Locs) -> list[Diagnostic]:
    if isinstance(options, str) and not is_template(options):
        return [
            error(
                locs.value(path),
                "form-keyword",
                "enum must be a list, or a template like "
                "\"{{ agents | map(attribute='name') | list }}\"",
            )
        ]
    return []


def _fits(value: Any, schema: dict[str, Any]) -> bool:
    kind = schema["type"]
    if kind == "boolean":
        return isinstance(value, bool)
    if kind in ("number", "integer"):
        number = int if kind == "integer" else int | float
        return isinstance(value, number) and not isinstance(value, bool)
    if kind == "string":
        options = schema.get("enum")
        consts = [c.get("const") for c in schema.get("oneOf", [])]
        return isinstance(value, str) and (
            (not isinstance(options, list) or value in options) and (not consts or value in consts)
        )
    return isinstance(value, list) and all(isinstance(v, str) for v in value)
