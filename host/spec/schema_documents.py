"""The schema of the spec's two documents: ``kind: server`` and ``kind: tool`` (with its examples).

:func:`server`, :func:`tool` and :func:`example` are the definitions of those names in
:mod:`host.spec.schema`; a tool's steps are defined in :mod:`host.spec.schema_steps`.
"""

from __future__ import annotations

from typing import Any

from host.spec.schema_parts import RESULT, duration, scopes, text
from host.spec.vocabulary import TOOL_NAME

__all__ = ["example", "server", "tool"]


def example() -> dict[str, Any]:
    """The ``example`` definition: a scripted call of a tool, with its answers and expectation."""
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
            "name": text("What the example shows."),
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
                    "text": text("A substring of the result's text."),
                    "pending": text("The approve step whose request is left undecided."),
                },
            },
        },
    }


def tool() -> dict[str, Any]:
    """The ``tool`` definition: one tool, its steps, and how it is listed, scoped and audited."""
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
            "title": text("A display name."),
            "description": text("What the model reads about the tool."),
            "annotations": _annotations(),
            "input": {
                "type": "object",
                "description": "JSON Schema (2020-12) of the arguments; `type: object` is implied.",
            },
            "output": {"type": "object", "description": "JSON Schema (2020-12) of the result."},
            "steps": {"type": "array", "items": {"$ref": "#/definitions/step"}},
            "result": {
                **RESULT,
                "description": (
                    "A read-only tool's result (a tool without an act): a template mapping "
                    "rendered from the names in scope (default: the value of its last read)."
                ),
            },
            "examples": {"type": "array", "items": {"$ref": "#/definitions/example"}},
            "scopes": scopes("Scopes a caller needs for this tool, on top of the server's."),
            "task": {
                "enum": ["required", "optional", "never"],
                "description": (
                    "Whether a call that waits on someone else (an approve, a URL ask) runs as "
                    "an MCP task for clients that declare the tasks extension: optional "
                    "(default where a step can wait), required (clients without it are "
                    "refused), or never."
                ),
            },
            "audit": _audit(),
        },
    }


def _annotations() -> dict[str, Any]:
    """A tool's MCP annotations: a display title and the behaviour hints."""
    hint = {"type": "boolean"}
    return {
        "type": "object",
        "additionalProperties": False,
        "properties": {
            "title": {"type": "string"},
            "readOnlyHint": hint,
            "destructiveHint": hint,
            "idempotentHint": hint,
            "openWorldHint": hint,
        },
    }


def _audit() -> dict[str, Any]:
    """A tool's ``audit``: which fields its audit records keep redacted."""
    return {
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
    }


def server() -> dict[str, Any]:
    """The ``server`` definition: what the host says of itself and its defaults for every tool."""
    return {
        "type": "object",
        "required": ["kind"],
        "additionalProperties": False,
        "properties": {
            "kind": {"const": "server"},
            "name": text("serverInfo.name"),
            "version": text("serverInfo.version"),
            "instructions": text("Returned by server/discover and initialize."),
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
            "scopes": scopes("Scopes a caller needs for every tool call."),
            "timeouts": {
                "type": "object",
                "additionalProperties": False,
                "description": "Defaults for steps that set no `timeout:`.",
                "properties": {
                    "read": duration("How long a read may run."),
                    "act": duration("How long an act may run before the caller is told."),
                },
            },
        },
    }
