"""The spec language as one JSON Schema (draft-07), built here and shipped as ``schema.json``.

The same dict is the validator's first pass and what editors load through
``# yaml-language-server: $schema=...``, so the two can never disagree. ``host schema`` prints it;
a test fails when the shipped file is stale (``host schema -o host/spec/schema.json`` rewrites it).
"""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path
from typing import Any

from host.spec.durations import DURATION_PATTERN

__all__ = [
    "FORM_COMMON",
    "FORM_KEYWORDS",
    "FORM_TYPES",
    "HANDLER",
    "IDENTIFIER",
    "SCHEMA_PATH",
    "SCOPE",
    "TOOL_NAME",
    "build_schema",
    "flat_schema",
    "render",
    "schema",
]

SCHEMA_PATH = Path(__file__).with_name("schema.json")
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


def _text(description: str) -> dict[str, Any]:
    return {"type": "string", "description": description}


def _name(description: str) -> dict[str, Any]:
    return {"type": "string", "pattern": IDENTIFIER, "description": description}


def _handler(description: str) -> dict[str, Any]:
    return {"type": "string", "pattern": HANDLER, "description": description}


def _duration(description: str) -> dict[str, Any]:
    return {
        "type": "string",
        "pattern": DURATION_PATTERN,
        "description": f"{description} A number and a unit: 500ms, 30s, 10m, 8h, 7d.",
    }


def _scopes(description: str) -> dict[str, Any]:
    return {
        "type": "array",
        "uniqueItems": True,
        "items": {"type": "string", "pattern": SCOPE},
        "description": (
            f"{description} Hierarchical on ':': a token with `tickets` holds `tickets:read`."
        ),
    }


_RESULT = {
    "type": ["object", "string"],
    "description": "The tool's result then: a mapping (strings inside are templates) or a text.",
}
_WHEN = _text("A bare Jinja expression; ask only when it is true, e.g. `agent is undefined`.")
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


def _form_field() -> dict[str, Any]:
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
            "read": _name("Binds what the handler returns to this name."),
            "call": _handler("The read-only handler, `module:function`."),
            "missing": _text("A tool error text when the handler returns None (a template)."),
            "timeout": _duration("How long the read may run (default: the server's timeouts)."),
        },
    }


def _ask_step() -> dict[str, Any]:
    """An ``ask`` step: a form the user fills in."""
    return {
        "required": ["ask", "message", "form"],
        "additionalProperties": False,
        "properties": {
            "ask": _name("The question's name; `NAME.action` is accept, decline or cancel."),
            "message": _text("What the user reads (a template)."),
            "form": {
                "type": "object",
                "minProperties": 1,
                "propertyNames": {"pattern": IDENTIFIER},
                "additionalProperties": {"$ref": "#/definitions/formField"},
                "description": "The form's fields by name; each is a name in scope afterwards.",
            },
            "when": _WHEN,
            "declined": _RESULT,
            "cancelled": _RESULT,
            "mode": {
                "enum": ["form", "url"],
                "description": (
                    "`form` (default): the client shows the form. `url`: a page of the "
                    "host's own asks it, shown only to the caller; the way to ask for a secret."
                ),
            },
            "wait": _duration(
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
            "for": _duration("How long a yes is kept (at most 30d)."),
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
            "confirm": _name("The question's name; `NAME.action` is accept, decline or cancel."),
            "message": _text("The yes/no question (a template)."),
            "label": _text("The checkbox's description."),
            "when": _WHEN,
            "declined": _RESULT,
            "cancelled": _RESULT,
            "unticked": _RESULT,
            "remember": _remember(),
        },
    }


def _approve_step() -> dict[str, Any]:
    """An ``approve`` step: another person's yes."""
    return {
        "required": ["approve", "message", "approvers"],
        "additionalProperties": False,
        "properties": {
            "approve": _name(
                "Another person's yes; after it `NAME.approved_by`, `NAME.reason`, `NAME.request`."
            ),
            "message": _text("What approvers read (a template)."),
            "approvers": {
                **_scopes("Who may decide: an approver holds one of these scopes."),
                "minItems": 1,
            },
            "count": {
                "type": "integer",
                "minimum": 1,
                "description": "How many distinct approvers must say yes (default 1).",
            },
            "wait": _duration("How long one call waits for the decision (default 1m; 0s: never)."),
            "expires": _duration("How long the request can be decided (default 1h; at most 7d)."),
            "when": _WHEN,
            "rejected": _RESULT,
            "expired": _RESULT,
            "remember": _remember(),
        },
    }


def _act_step() -> dict[str, Any]:
    """The ``act`` step: the one handler that may change the world."""
    return {
        "required": ["act"],
        "additionalProperties": False,
        "properties": {
            "act": _handler("The one handler that may change the world."),
            "returns": {
                "enum": ["value", "content"],
                "description": (
                    "What the handler returns: `value` (default; text, or a mapping sent as "
                    "structured content and JSON text) or `content` (a list of MCP content "
                    "blocks: text, image, audio, resource, resource_link)."
                ),
            },
            "timeout": _duration(
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
            "lock_wait": _duration(
                "How long a call waits for the lock (at most 5m; without it, a call does not wait)."
            ),
            "busy": {
                **_RESULT,
                "description": "The result when the lock was not had in time (a template).",
            },
        },
    }


def _steps() -> dict[str, Any]:
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


def _example() -> dict[str, Any]:
    answer = {
        "type": "object",
        "required": ["action"],
        "additionalProperties": False,
        "properties": {
            "action": {"enum": ["accept", "decline", "cancel"]},
            "content": {"type": "object"},
        },
    }
    decision = {
        "type": "object",
        "required": ["decision"],
        "additionalProperties": False,
        "properties": {
            "decision": {"enum": ["approve", "reject"]},
            "by": {
                "description": "Who decides (default: approver), or a list deciding in turn.",
                "anyOf": [
                    {"type": "string"},
                    {"type": "array", "items": {"type": "string"}, "minItems": 1},
                ],
            },
            "reason": {"type": "string", "description": "The approver's reason."},
        },
    }
    return {
        "type": "object",
        "required": ["name"],
        "additionalProperties": False,
        "properties": {
            "name": _text("What the example shows."),
            "arguments": {"type": "object", "description": "The tool's arguments."},
            "answers": {
                "type": "object",
                "additionalProperties": answer,
                "description": "Scripted answers by question name.",
            },
            "approvals": {
                "type": "object",
                "additionalProperties": decision,
                "description": "Scripted decisions by approve step name.",
            },
            "expect": {
                "type": "object",
                "additionalProperties": False,
                "properties": {
                    "result": {"description": "The result, or a subset of its mapping."},
                    "error": {"type": "integer", "description": "A JSON-RPC error code."},
                    "is_error": {"type": "boolean", "description": "A tool error (isError)."},
                    "asks": {"type": "array", "items": {"type": "string"}},
                    "text": _text("A substring of the result's text."),
                    "pending": _text("The approve step whose request is left undecided."),
                },
            },
        },
    }


def _tool() -> dict[str, Any]:
    hint = {"type": "boolean"}
    return {
        "type": "object",
        "required": ["kind", "name", "description", "steps"],
        "additionalProperties": False,
        "properties": {
            "kind": {"const": "tool"},
            "name": {
                "type": "string",
                "pattern": TOOL_NAME,
                "description": "Unique; 1-128 characters of A-Z a-z 0-9 _ . -",
            },
            "title": _text("A display name."),
            "description": _text("What the model reads about the tool."),
            "annotations": {
                "type": "object",
                "additionalProperties": False,
                "properties": {
                    "title": {"type": "string"},
                    "readOnlyHint": hint,
                    "destructiveHint": hint,
                    "idempotentHint": hint,
                    "openWorldHint": hint,
                },
            },
            "input": {
                "type": "object",
                "description": "JSON Schema (2020-12) of the arguments; `type: object` is implied.",
            },
            "output": {"type": "object", "description": "JSON Schema (2020-12) of the result."},
            "steps": {"type": "array", "items": {"$ref": "#/definitions/step"}},
            "result": {
                **_RESULT,
                "description": (
                    "A read-only tool's result (a tool without an act): a template mapping "
                    "rendered from the names in scope (default: the value of its last read)."
                ),
            },
            "examples": {"type": "array", "items": {"$ref": "#/definitions/example"}},
            "scopes": _scopes("Scopes a caller needs for this tool, on top of the server's."),
            "task": {
                "enum": ["required", "optional", "never"],
                "description": (
                    "Whether a call that waits on someone else (an approve, a URL ask) runs as "
                    "an MCP task for clients that declare the tasks extension: optional "
                    "(default where a step can wait), required (clients without it are "
                    "refused), or never."
                ),
            },
            "audit": {
                "type": "object",
                "additionalProperties": False,
                "description": "How calls of this tool are kept in the audit trail.",
                "properties": {
                    "redact": {
                        "type": "array",
                        "uniqueItems": True,
                        "items": {"type": "string"},
                        "description": 'Input and form fields stored as "[redacted]".',
                    }
                },
            },
        },
    }


def _server() -> dict[str, Any]:
    return {
        "type": "object",
        "required": ["kind"],
        "additionalProperties": False,
        "properties": {
            "kind": {"const": "server"},
            "name": _text("serverInfo.name"),
            "version": _text("serverInfo.version"),
            "instructions": _text("Returned by server/discover and initialize."),
            "elicitation": {
                "type": "object",
                "additionalProperties": False,
                "properties": {
                    "enabled": {
                        "type": "boolean",
                        "description": (
                            "Let tools ask the user. `false` written out is a kill switch: "
                            "calls that need to ask get ELICITATION_DISABLED."
                        ),
                    },
                    "fallback": {
                        "type": "boolean",
                        "description": (
                            "`false`: no fallback tool for legacy clients without forms "
                            "(default true)."
                        ),
                    },
                },
            },
            "scopes": _scopes("Scopes a caller needs for every tool call."),
            "timeouts": {
                "type": "object",
                "additionalProperties": False,
                "description": "Defaults for steps that set no `timeout:`.",
                "properties": {
                    "read": _duration("How long a read may run."),
                    "act": _duration("How long an act may run before the caller is told."),
                },
            },
        },
    }


def build_schema() -> dict[str, Any]:
    """The spec language's JSON Schema as a dict."""
    return {
        "$schema": "http://json-schema.org/draft-07/schema#",
        "title": "host spec (v1)",
        "description": "One document of a host spec directory: `kind: server` or `kind: tool`.",
        "type": "object",
        "required": ["kind"],
        "properties": {"kind": {"enum": ["server", "tool"]}},
        "allOf": [
            {
                "if": {"required": ["kind"], "properties": {"kind": {"const": kind}}},
                "then": {"$ref": f"#/definitions/{kind}"},
            }
            for kind in ("server", "tool")
        ],
        "definitions": {
            "server": _server(),
            "tool": _tool(),
            "step": _steps(),
            "formField": _form_field(),
            "example": _example(),
        },
    }


def render() -> str:
    """The schema as the text of ``schema.json``."""
    return json.dumps(build_schema(), indent=2) + "\n"


@cache
def schema() -> dict[str, Any]:
    """The schema (built once per process)."""
    return build_schema()


@cache
def flat_schema() -> dict[str, Any]:
    """The schema with every ``$ref`` replaced by its target: the same rules, checked faster."""
    definitions = schema()["definitions"]

    def inline(node: Any) -> Any:
        if isinstance(node, dict):
            ref = node.get("$ref")
            if isinstance(ref, str) and ref.startswith("#/definitions/"):
                return inline(definitions[ref.removeprefix("#/definitions/")])
            return {k: inline(v) for k, v in node.items() if k != "definitions"}
        if isinstance(node, list):
            return [inline(item) for item in node]
        return node

    flat: dict[str, Any] = inline(schema())
    return flat
