"""JSON Schema checks on the call path: a compiled yes first, :mod:`jsonschema` for every no.

Arguments, answers and structured results are checked on every call. :mod:`jsonschema` walks the
schema per instance, building a validator object per keyword: tens of µs even for a small schema.
``fastjsonschema`` compiles a schema to Python code once and checks in a few. It speaks drafts 4
to 7, not 2020-12, so it is trusted only to say yes, and only for schemas made of keywords both
drafts read alike (:data:`_SAME`). Any other schema, and every instance it says no to, goes to
jsonschema's 2020-12 validator, which decides and names the errors: the verdict is always
jsonschema's, and the compiled check only skips its work for what it would accept anyway
(``tests/unit/test_schemas.py`` checks that with generated schemas and instances).

NOTE: the spec layer's checks of spec documents use :mod:`host.spec.quick` instead: it compiles
the host's own two schemas faster than fastjsonschema does, and knows only their keywords.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import fastjsonschema
from jsonschema import Draft202012Validator, ValidationError

__all__ = ["SchemaCheck", "error_message"]

#: Keywords whose draft-7 meaning is their 2020-12 meaning (``items`` only as one schema).
_SAME = frozenset(
    {
        "type", "properties", "required", "additionalProperties", "patternProperties",
        "propertyNames", "minProperties", "maxProperties", "items", "minItems", "maxItems",
        "uniqueItems", "minLength", "maxLength", "pattern", "minimum", "maximum",
        "exclusiveMinimum", "exclusiveMaximum", "multipleOf", "enum", "const", "allOf", "anyOf",
        "oneOf", "not", "title", "description", "default", "examples", "format",
    }
)  # fmt: skip
_SUBSCHEMA = frozenset({"additionalProperties", "propertyNames", "items", "not"})
_SUBSCHEMAS = frozenset({"allOf", "anyOf", "oneOf"})
_SCHEMA_MAPS = frozenset({"properties", "patternProperties"})


def _same_in_both(schema: Any) -> bool:
    """Whether ``schema`` uses only keywords both drafts read alike, all the way down."""
    if isinstance(schema, bool):
        return True
    if not isinstance(schema, dict) or not schema.keys() <= _SAME:
        return False
    for key, value in schema.items():
        if key in _SUBSCHEMA and not _same_in_both(value):
            return False
        if key in _SUBSCHEMAS and not (
            isinstance(value, list) and all(_same_in_both(s) for s in value)
        ):
            return False
        if key in _SCHEMA_MAPS and not (
            isinstance(value, dict) and all(_same_in_both(s) for s in value.values())
        ):
            return False
    return True


class SchemaCheck:
    """One schema's check: the errors of an instance, none when it is valid.

    Args:
        schema: A JSON Schema (2020-12), already checked to be one.
        compiled: Whether to compile it on first use; a schema made for one call (rendered from
            templates) is checked by jsonschema alone, since compiling costs more than it saves.
    """

    def __init__(self, schema: dict[str, Any], *, compiled: bool = True) -> None:
        self.schema = schema
        self._validator: Draft202012Validator | None = None
        self._fast: Callable[[Any], Any] | None = None
        # NOTE: True here means "nothing (more) to compile": jsonschema alone.
        self._compiled = not compiled

    @property
    def validator(self) -> Draft202012Validator:
        """jsonschema's validator of the schema, made when first needed.

        NOTE: not at start-up: with its reference registry it costs tens of KB and a fraction
        of a millisecond, for each of a thousand tools' schemas, most never called.
        """
        if self._validator is None:
            self._validator = Draft202012Validator(self.schema)
        return self._validator

    def errors(self, instance: Any) -> list[ValidationError]:
        """Every error of ``instance`` against the schema; empty when it is valid."""
        if self.passes(instance):
            return []
        return list(self.validator.iter_errors(instance))

    def first_error(self, instance: Any) -> ValidationError | None:
        """The first error of ``instance``, or None when it is valid."""
        if self.passes(instance):
            return None
        return next(iter(self.validator.iter_errors(instance)), None)

    def passes(self, instance: Any) -> bool:
        """Whether the compiled check accepts ``instance`` (then jsonschema would too).

        False says nothing either way: ask :meth:`errors`.
        """
        if not self._compiled:
            self._compile()
        if self._fast is None:
            return False
        try:
            self._fast(instance)
        except fastjsonschema.JsonSchemaException:
            return False
        return True

    def _compile(self) -> None:
        # NOTE: compiled on first use, not at start-up: a thousand tools would take seconds.
        # Two threads may both compile; either result is the same.
        self._compiled = True
        if not _same_in_both(self.schema):
            return
        try:
            # NOTE: detailed_exceptions stays on: without it fastjsonschema cannot compile
            # ``const`` (its message template needs the details).
            self._fast = fastjsonschema.compile(self.schema, use_default=False, use_formats=False)
        except Exception:  # a schema the compiler cannot take: jsonschema alone, always
            self._fast = None


def error_message(error: ValidationError, hidden: frozenset[str]) -> str:
    """``error``'s message; for a field in ``hidden`` (redacted), the rule without the value.

    NOTE: jsonschema quotes the instance (``'4417' is too long``); the message goes back to the
    client and into the log, so a redacted field's is rebuilt from the rule alone.
    """
    path = list(error.absolute_path)
    if not (path and path[0] in hidden):
        return error.message
    rule = json.dumps(error.validator_value, ensure_ascii=False, default=str)
    shown = f" {rule}" if len(rule) <= 80 else ""
    return f"the value (redacted) does not satisfy {error.validator}{shown}"
