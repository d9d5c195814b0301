"""Forms: only what MCP clients can render, and never a secret.

The schema pass already limits a field to MCP's keywords and types; here each keyword is checked
against the field's type (``minLength`` only on strings, ...), choices and defaults are checked for
shape, and fields that ask for secrets are refused (MCP forbids them in form mode).
"""

from __future__ import annotations

import re
from typing import Any

from host.spec.diagnostics import Diagnostic
from host.spec.model import Ask, FormField
from host.spec.rulebook import error, one_of
from host.spec.rules.facts import ToolFacts
from host.spec.templates import is_template
from host.spec.vocabulary import FORM_COMMON, FORM_KEYWORDS
from host.spec.yaml import Locs, YPath

__all__ = ["asks_for_secret", "check_forms"]

# NOTE: matched on the field's name, title and description, split into lower-case words. Every
# alternative is a phrase people use for a secret; bare words that are usually harmless ("code",
# "key") are left out so that a zip code or an issue key is never refused, and "tokens" (plural)
# is left out because it is usually a count ("max tokens").
_SECRET = re.compile(
    r"\b(?:"
    r"pass(?:word|wd|phrase|code)|secret|token|api ?key|apikey|access ?key|secret ?key"
    r"|private ?key|ssh ?key|signing ?key|key ?file|pem|kube ?config"
    r"|credentials?|(?:credit|debit|bank) ?card|card ?(?:number|no)|cvv|cvc|security ?code"
    r"|pin|pin ?(?:code|number)|ssn|social security|iban"
    r"|one ?time ?(?:code|password|pin)|otp|totp|2 ?fa|mfa|two ?factor|2 ?step|multi ?factor"
    r"|authenticator|(?:verification|auth|authentication|login|sign ?in|recovery|backup|reset)"
    r" ?code|recovery ?(?:key|phrase)|seed ?phrase|session ?(?:cookie|id)|cookie|bearer|jwt"
    r")(?:(?<!token)s)?\b"
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


def check_forms(facts: ToolFacts) -> list[Diagnostic]:
    """``form-keyword``, ``form-secret`` and ``form-fill`` for every ask's fields."""
    doc = facts.doc
    found: list[Diagnostic] = []
    inputs = doc.tool.input.get("properties")
    input_names = set(inputs) if isinstance(inputs, dict) else set()
    for index, step in enumerate(doc.tool.steps):
        if not isinstance(step, Ask):
            continue
        for field in step.fields:
            path: YPath = ("steps", index, "form", field.name)
            found.extend(_field(field, path, doc.locs, step))
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


def _field(field: FormField, path: YPath, locs: Locs, step: Ask) -> list[Diagnostic]:
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
                f"default {schema['default']!r} is not a valid {kind} answer for this field; "
                f"{_default_fix(schema['default'], schema)}",
            )
        )
    found.extend(_secret(field, path, locs, step))
    return found


def _secret(field: FormField, path: YPath, locs: Locs, step: Ask) -> list[Diagnostic]:
    """``form-secret`` and ``secret-form``: a secret is asked only on the host's page."""
    if step.url:
        return []
    if field.secret:
        return [
            error(
                locs.key((*path, "secret")),
                "secret-form",
                f"form field '{field.name}' says secret: true, but the ask '{step.name}' shows "
                "its form in the client, which may show and log it; add `mode: url` to the ask, "
                "so the host's own page asks it",
            )
        ]
    schema = field.schema
    if schema["type"] != "string" or "enum" in schema or "oneOf" in schema:
        return []
    secret = asks_for_secret(field.name, schema.get("title"), schema.get("description"))
    if not secret:
        return []
    return [
        error(
            field.pos,
            "form-secret",
            f"form field '{field.name}' asks for a secret ({secret}): MCP forbids "
            "passwords, codes, tokens, keys and payment data in forms, which clients "
            f"may show and log; add `mode: url` to the ask '{step.name}' (and `secret: true` "
            "to the field), so the host's own page asks it, shown only to the caller; or let the "
            "handler read it from its environment instead",
        )
    ]


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


def _default_fix(value: Any, schema: dict[str, Any]) -> str:
    """How to write ``value`` as a default that fits ``schema``."""
    kind = schema["type"]
    options = schema.get("enum") or [c.get("const") for c in schema.get("oneOf", [])]
    if kind == "string" and isinstance(options, list) and options:
        return f"use one of the choices: {', '.join(map(str, options))}"
    if kind in ("number", "integer") and isinstance(value, str):
        try:
            number = int(value) if kind == "integer" else float(value)
        except ValueError:
            return f"write {_a(kind)} without quotes, like default: 0"
        return f"write the number without quotes: default: {number}"
    if kind == "boolean":
        word = "true" if str(value).lower() in ("yes", "y", "on", "1", "true") else "false"
        return f"write true or false without quotes: default: {word}"
    if kind == "string":
        return f'quote it: default: "{value}"'
    return "write a list of the choices, like default: [a]"


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
