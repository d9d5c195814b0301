"""The spec language's words: the patterns its names follow and the keywords its form fields take.

The schema (:mod:`host.spec.schema`) writes them into ``schema.json``; the rules and the shape
messages read the same constants, so a name or a keyword is judged by one definition everywhere.
"""

from __future__ import annotations

__all__ = [
    "FORM_COMMON",
    "FORM_KEYWORDS",
    "FORM_TYPES",
    "HANDLER",
    "IDENTIFIER",
    "SCOPE",
    "TOOL_NAME",
]

IDENTIFIER = r"^[A-Za-z_][A-Za-z0-9_]*$"
TOOL_NAME = r"^[A-Za-z0-9_.-]{1,128}$"
HANDLER = r"^[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*:[A-Za-z_][A-Za-z0-9_]*$"
# A scope token (RFC 6749: printable ASCII but space, '"' and '\'), in parts joined by ':'.
SCOPE = r"^[!#-9;-\[\]-~]+(:[!#-9;-\[\]-~]+)*$"
FORM_TYPES = ("string", "number", "integer", "boolean", "array")

# Which keywords MCP's elicitation schema allows, by field type (plus our host-only `optional`).
FORM_KEYWORDS: dict[str, frozenset[str]] = {
    "string": frozenset(
        {"minLength", "maxLength", "format", "enum", "enumNames", "oneOf", "default"}
    ),
    "number": frozenset({"minimum", "maximum", "default"}),
    "integer": frozenset({"minimum", "maximum", "default"}),
    "boolean": frozenset({"default"}),
    "array": frozenset({"items", "minItems", "maxItems", "default"}),
}
FORM_COMMON = frozenset({"type", "title", "description", "optional", "secret"})
