"""Forms: a step's fields → an MCP ``requestedSchema`` (modern form), and answer checks.

A form is compiled once. Only a form whose options come from a template (``enum: "{{ ... }}"``) is
rendered per call; its answer validator is then built from the rendered schema. Any other form's
validator is built on its first answer and kept.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from dataclasses import dataclass
from functools import cached_property
from typing import Any

from host.errors import AnswerMismatch
from host.machine.schemas import SchemaCheck, error_message
from host.spec.model import FormField
from host.spec.templates import Renderer, compile_result, is_template

__all__ = ["Form", "confirm_form"]

#: Keys the host adds to a field that MCP does not know; never sent to clients.
_HOST_ONLY = ("optional",)


def _field_schema(field: FormField) -> dict[str, Any]:
    return {k: v for k, v in field.schema.items() if k not in _HOST_ONLY}


def _dynamic(schema: Mapping[str, Any]) -> bool:
    return any(isinstance(v, str) and is_template(v) for k, v in schema.items() if k == "enum") or (
        isinstance(schema.get("items"), Mapping) and _dynamic(schema["items"])
    )


@dataclass(frozen=True)
class Form:
    """One compiled form.

    Attributes:
        schema: The ``requestedSchema`` when it has no templates, else the unrendered shape.
        renderer: Renders a dynamic schema from the scope; None when the form is static.
    """

    schema: dict[str, Any]
    defaults: dict[str, Any]
    renderer: Renderer | None

    @classmethod
    def build(cls, fields: tuple[FormField, ...]) -> Form:
        """Compile a step's fields."""
        properties = {f.name: _field_schema(f) for f in fields}
        schema: dict[str, Any] = {"type": "object", "properties": properties}
        required = [f.name for f in fields if f.required]
        if required:
            schema["required"] = required
        defaults = {f.name: f.schema["default"] for f in fields if "default" in f.schema}
        if any(_dynamic(p) for p in properties.values()):
            return cls(schema, defaults, compile_result(schema))
        return cls(schema, defaults, None)

    @cached_property
    def _static_check(self) -> SchemaCheck:
        """The answer check of a static form, built on its first answer.

        NOTE: not at start-up: a worker with many tools would build (and keep) one for every
        form, most of which it never sees answered.
        """
        return SchemaCheck(_answer_schema(self.schema))

    def render(self, scope: Mapping[str, Any]) -> dict[str, Any]:
        """The ``requestedSchema`` for this call."""
        if self.renderer is None:
            return self.schema
        rendered: dict[str, Any] = self.renderer(scope)
        return rendered

    def check(
        self,
        key: str,
        schema: dict[str, Any],
        content: Any,
        hidden: frozenset[str] = frozenset(),
    ) -> dict[str, Any]:
        """Check an accepted answer's ``content`` against the form; return the fields to bind.

        Fields the form does not ask for are dropped, and defaults fill fields left out; the
        errors of fields in ``hidden`` (redacted) name the rule, never the value.

        Raises:
            AnswerMismatch: the content is not an object, or a field is missing or mistyped.
        """
        if not isinstance(content, Mapping):
            raise AnswerMismatch(key, [{"field": "", "message": "content must be an object"}])
        known = {k: v for k, v in content.items() if k in schema["properties"]}
        validator = (
            self._static_check
            if self.renderer is None
            else SchemaCheck(_answer_schema(schema), compiled=False)
        )
        if validator.passes(known):
            return {**self.defaults, **known}  # NOTE: valid, as most are: no errors to sort
        errors = [
            {
                "field": ".".join(str(p) for p in e.absolute_path) or _missing_field(e),
                "message": error_message(e, hidden),
            }
            for e in sorted(validator.errors(known), key=lambda e: list(e.absolute_path))
        ]
        if errors:
            raise AnswerMismatch(key, errors)
        return {**self.defaults, **known}


def _missing_field(error: Any) -> str:
    if error.validator == "required":
        missing: str = error.message.split("'")[1] if "'" in error.message else ""
        return missing
    return ""


def _answer_schema(schema: Mapping[str, Any]) -> dict[str, Any]:
    """The schema answers are checked with: the form less its presentation-only keys."""
    checked = copy.deepcopy(dict(schema))
    for prop in checked["properties"].values():
        prop.pop("default", None)
        prop.pop("enumNames", None)
    return checked


def confirm_form(label: str | None) -> tuple[FormField, ...]:
    """The form of a ``confirm`` step: one boolean field ``confirm``."""
    schema: dict[str, Any] = {"type": "boolean", "description": label or "Tick to confirm"}
    return (FormField("confirm", schema, True),)
