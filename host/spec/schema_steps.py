"""The schema of a tool's steps and of the fields of its forms.

:func:`steps` is the ``step`` definition of :mod:`host.spec.schema` (``read``, ``ask``,
``confirm``, ``approve`` or ``act``), :func:`form_field` its ``formField`` one.
"""

from __future__ import annotations

from typing import Any

from host.spec.schema_parts import RESULT, WHEN, duration, handler, identifier, scopes, text
from host.spec.vocabulary import FORM_TYPES, IDENTIFIER

__all__ = ["form_field", "steps"]

_CHOICE = {
    "type": "object",
    "required": ["const", "title"],
    "additionalProperties": False,
    "properties": {"const": {"type": "string"}, "title": {"type": "string"}},
}
_OPTIONS = {
    "type": ["array", "string"],
    "items": {"type": "string"},
    "description": (
        "The choices: a list, or a template like \"{{ agents | map(attribute='name') | list }}\"."
    ),
}


def form_field() -> dict[str, Any]:
    """The ``formField`` definition: one field of an ask's form, as MCP's elicitation allows."""
    count = {"type": "integer", "minimum": 0}
    return {
        "type": "object",
        "description": (
            "One form field: a flat MCP primitive (string, number, integer, boolean, multi-select)."
        ),
        "required": ["type"],
        "additionalProperties": False,
        "properties": {
            "type": {"enum": list(FORM_TYPES)},
            "title": {"type": "string"},
            "description": {"type": "string"},
            "optional": {
                "type": "boolean",
                "description": "Host-only: the field may be left empty (else it is required).",
            },
            "secret": {
                "type": "boolean",
                "description": (
                    "Host-only, `mode: url` asks only: a secret (a password field on the "
                    "host's page, never shown back)."
                ),
            },
            "minLength": count,
            "maxLength": count,
            "format": {"enum": ["email", "uri", "date", "date-time"]},
            "minimum": {"type": "number"},
            "maximum": {"type": "number"},
            "default": {"description": "A default value of the field's type."},
            "enum": _OPTIONS,
            "enumNames": {"type": "array", "items": {"type": "string"}},
            "oneOf": {"type": "array", "items": _CHOICE, "minItems": 1},
            "items": {
                "type": "object",
                "additionalProperties": False,
                "properties": {
                    "type": {"const": "string"},
                    "enum": _OPTIONS,
                    "anyOf": {"type": "array", "items": _CHOICE, "minItems": 1},
                },
            },
            "minItems": count,
            "maxItems": count,
        },
    }


def _read_step() -> dict[str, Any]:
    """A ``read`` step: a read-only handler whose value is bound to a name."""
    return {
        "required": ["read", "call"],
        "additionalProperties": False,
        "properties": {
            "read": identifier("Binds what the handler returns to this name."),
            "call": handler("The read-only handler, `module:function`."),
            "missing": text("A tool error text when the handler returns None (a template)."),
            "timeout": duration("How long the read may run (default: the server's timeouts)."),
        },
    }


def _ask_step() -> dict[str, Any]:
    """An ``ask`` step: a form the user fills in."""
    return {
        "required": ["ask", "message", "form"],
        "additionalProperties": False,
        "properties": {
            "ask": identifier("The question's name; `NAME.action` is accept, decline or cancel."),
            "message": text("What the user reads (a template)."),
            "form": {
                "type": "object",
                "minProperties": 1,
                "propertyNames": {"pattern": IDENTIFIER},
                "additionalProperties": {"$ref": "#/definitions/formField"},
                "description": "The form's fields by name; each is a name in scope afterwards.",
            },
            "when": WHEN,
            "declined": RESULT,
            "cancelled": RESULT,
            "mode": {
                "enum": ["form", "url"],
                "description": (
                    "`form` (default): the client shows the form. `url`: a page of the "
                    "host's own asks it, shown only to the caller; the way to ask for a secret."
                ),
            },
            "wait": duration(
                "`mode: url`: how long a retry waits for the page to be submitted (default 30s)."
            ),
        },
    }


def _remember() -> dict[str, Any]:
    """A confirm's or an approval's ``remember``: keep a yes, and do not ask again."""
    return {
        "type": "object",
        "required": ["for"],
        "additionalProperties": False,
        "description": "Keep a yes for this caller, tool and key, and do not ask again.",
        "properties": {
            "for": duration("How long a yes is kept (at most 30d)."),
            "key": {
                "description": (
                    "What the yes is about: names in scope, like `[service, env]`, or "
                    "a template like `{{ service }}/{{ env }}` (default: the call's "
                    "arguments)."
                ),
                "anyOf": [
                    {"type": "string"},
                    {
                        "type": "array",
                        "minItems": 1,
                        "uniqueItems": True,
                        "items": {"type": "string", "pattern": IDENTIFIER},
                    },
                ],
            },
        },
    }


def _confirm_step() -> dict[str, Any]:
    """A ``confirm`` step: a yes/no question with a checkbox."""
    return {
        "required": ["confirm", "message"],
        "additionalProperties": False,
        "properties": {
            "confirm": identifier(
                "The question's name; `NAME.action` is accept, decline or cancel."
            ),
            "message": text("The yes/no question (a template)."),
            "label": text("The checkbox's description."),
            "when": WHEN,
            "declined": RESULT,
            "cancelled": RESULT,
            "unticked": RESULT,
            "remember": _remember(),
        },
    }


def _approve_step() -> dict[str, Any]:
    """An ``approve`` step: another person's yes."""
    return {
        "required": ["approve", "message", "approvers"],
        "additionalProperties": False,
        "properties": {
            "approve": identifier(
                "Another person's yes; after it `NAME.approved_by`, `NAME.reason`, `NAME.request`."
            ),
            "message": text("What approvers read (a template)."),
            "approvers": {
                **scopes("Who may decide: an approver holds one of these scopes."),
                "minItems": 1,
            },
            "count": {
                "type": "integer",
                "minimum": 1,
                "description": "How many distinct approvers must say yes (default 1).",
            },
            "wait": duration("How long one call waits for the decision (default 1m; 0s: never)."),
            "expires": duration("How long the request can be decided (default 1h; at most 7d)."),
            "when": WHEN,
            "rejected": RESULT,
            "expired": RESULT,
            "remember": _remember(),
        },
    }


def _act_step() -> dict[str, Any]:
    """The ``act`` step: the one handler that may change the world."""
    return {
        "required": ["act"],
        "additionalProperties": False,
        "properties": {
            "act": handler("The one handler that may change the world."),
            "returns": {
                "enum": ["value", "content"],
                "description": (
                    "What the handler returns: `value` (default; text, or a mapping sent as "
                    "structured content and JSON text) or `content` (a list of MCP content "
                    "blocks: text, image, audio, resource, resource_link)."
                ),
            },
            "timeout": duration(
                "How long the act may run before the caller is told it is still running "
                "(default: the server's timeouts)."
            ),
            "lock": {
                "type": "array",
                "minItems": 1,
                "uniqueItems": True,
                "items": {"type": "string", "pattern": IDENTIFIER},
                "description": (
                    "Names in scope, like `[service, environment]`: one act at a time holds "
                    "the lock of their values, across workers and instances."
                ),
            },
            "lock_wait": duration(
                "How long a call waits for the lock (at most 5m; without it, a call does not wait)."
            ),
            "busy": {
                **RESULT,
                "description": "The result when the lock was not had in time (a template).",
            },
        },
    }


def steps() -> dict[str, Any]:
    """The ``step`` definition: one step, judged by the schema of its kind."""
    chain: dict[str, Any] = {}
    # NOTE: an if/else chain, not oneOf: a step is judged by its first kind key, so a typo gets
    # one 'unknown key' message instead of four 'not valid under any schema' ones.
    kinds = [
        ("read", _read_step()),
        ("ask", _ask_step()),
        ("confirm", _confirm_step()),
        ("approve", _approve_step()),
        ("act", _act_step()),
    ]
    for kind, body in reversed(kinds):
        branch: dict[str, Any] = {"if": {"required": [kind]}, "then": body}
        if chain:
            branch["else"] = chain
        chain = branch
    return {
        "type": "object",
        "description": "One step: `read`, `ask`, `confirm`, `approve` or `act`.",
        "anyOf": [{"required": [kind]} for kind, _ in kinds],
        **chain,
    }
