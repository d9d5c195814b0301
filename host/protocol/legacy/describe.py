"""What the model reads when a legacy client cannot show a form: the question, field by field.

A ``sendElicitationResult`` question (:mod:`.fallback`) reaches the user through the model, as
text: what to ask, what each field accepts (its kind, choices, limits, default), an example of
the content to send back, and how long the elicitation id stays valid.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from host.machine import Question
from host.spec.model import FALLBACK_TOOL

__all__ = ["describe_question", "lifetime"]


def describe_question(tool: str, question: Question, eid: str, ttl_s: float) -> str:
    """What the model reads: the question, each field, and how to send the answer back."""
    schema = question.schema
    required = set(schema.get("required", []))
    fields = [
        _describe_field(name, prop, name in required)
        for name, prop in schema.get("properties", {}).items()
    ]
    example = {name: _example(prop) for name, prop in schema.get("properties", {}).items()}
    return "\n".join(
        [
            f"{tool} needs an answer from the user before it can go on. This client cannot show "
            "forms, so ask the user this question yourself, in the chat, and wait for their "
            "reply. Do not answer it for them.",
            "",
            f"Question: {question.message}",
            "Fields:",
            *fields,
            "",
            f"Then call the tool {FALLBACK_TOOL} with:",
            f'- elicitationId: "{eid}"',
            '- action: "accept" with the user\'s answers in content, for example '
            f'{json.dumps(example, ensure_ascii=False)}; "decline" if the user says no; '
            '"cancel" if they would rather not answer (no content for either).',
            f"This elicitationId works once and expires in {lifetime(ttl_s)}.",
        ]
    )


_LIMITS = (
    ("minLength", "at least {} characters"),
    ("maxLength", "at most {} characters"),
    ("minimum", "at least {}"),
    ("maximum", "at most {}"),
    ("minItems", "at least {} choices"),
    ("maxItems", "at most {} choices"),
)


def lifetime(ttl_s: float) -> str:
    """How long an elicitation id lives, in whole minutes as the model reads it ("10 minutes")."""
    minutes = max(1, round(ttl_s / 60))
    return f"{minutes} minute{'s' if minutes != 1 else ''}"


def _describe_field(name: str, prop: Mapping[str, Any], required: bool) -> str:
    kind = _kind(prop)
    notes = ["required" if required else "optional"]
    if "default" in prop:
        notes.append(f"default {json.dumps(prop['default'], ensure_ascii=False)}")
    if "format" in prop:
        notes.append(f"format {prop['format']}")
    for key, label in _LIMITS:
        if key in prop:
            notes.append(label.format(prop[key]))
    line = f"- {name} ({kind}; {', '.join(notes)})"
    description = prop.get("title") or prop.get("description")
    if prop.get("title") and prop.get("description"):
        description = f"{prop['title']}: {prop['description']}"
    return f"{line}: {description}" if description else line


def _choices(prop: Mapping[str, Any]) -> list[tuple[Any, str | None]]:
    if "enum" in prop:
        names = prop.get("enumNames") or [None] * len(prop["enum"])
        return list(zip(prop["enum"], names, strict=False))
    options = prop.get("oneOf") or prop.get("anyOf") or []
    return [(o.get("const"), o.get("title")) for o in options if isinstance(o, Mapping)]


def _show(choices: list[tuple[Any, str | None]]) -> str:
    return ", ".join(
        json.dumps(value, ensure_ascii=False) + (f" ({title})" if title else "")
        for value, title in choices
    )


def _kind(prop: Mapping[str, Any]) -> str:
    if prop.get("type") == "array":
        items = prop.get("items")
        choices = _choices(items) if isinstance(items, Mapping) else []
        return f"a list of any of {_show(choices)}" if choices else "a list"
    choices = _choices(prop)
    if choices:
        return f"one of {_show(choices)}"
    return {"boolean": "true or false", "integer": "a whole number", "number": "a number"}.get(
        str(prop.get("type")), "text"
    )


def _example(prop: Mapping[str, Any]) -> Any:
    if "default" in prop:
        return prop["default"]
    if prop.get("type") == "array":
        items = prop.get("items")
        choices = _choices(items) if isinstance(items, Mapping) else []
        return [choices[0][0]] if choices else []
    choices = _choices(prop)
    if choices:
        return choices[0][0]
    return {
        "boolean": True,
        "integer": prop.get("minimum", 1),
        "number": prop.get("minimum", 1),
    }.get(str(prop.get("type")), "...")
