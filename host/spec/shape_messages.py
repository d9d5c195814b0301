"""What the schema pass says about each kind of mistake: the words, and the fix they suggest.

:mod:`host.spec.rules.shape` maps each ``jsonschema`` error to a rule and a place; the sentences
live here, by the kind of mistake (an unknown key, a wrong type, a name, a duration, a scope).
"""

from __future__ import annotations

import re
from typing import Any

from jsonschema.exceptions import ValidationError

from host.spec.diagnostics import Diagnostic
from host.spec.duration_limits import Limit, limit_at
from host.spec.durations import DurationError, parse_duration
from host.spec.model import STEP_KINDS
from host.spec.naming import describe_characters, plain_name, tool_name
from host.spec.rulebook import did_you_mean, error, one_of
from host.spec.vocabulary import FORM_COMMON, FORM_KEYWORDS, FORM_TYPES
from host.spec.yaml import Document, YPath
from host.spec.yaml.hints import quoted

__all__ = [
    "bad_choice",
    "bad_name",
    "bad_pattern",
    "bad_scope",
    "duration_problem",
    "in_form",
    "is_duration",
    "kind_of",
    "missing_text",
    "type_hint",
    "unknown_key",
    "wrong_type_text",
]

_TYPE_WORDS = {
    "object": "a mapping",
    "array": "a list",
    "string": "text",
    "integer": "an integer",
    "number": "a number",
    "boolean": "true or false",
    "null": "empty",
}
_KNOWN_KEYWORDS = frozenset().union(*FORM_KEYWORDS.values())


def kind_of(value: Any) -> str:
    if isinstance(value, bool):
        return "true or false"
    for name, python in (("object", dict), ("array", list), ("string", str)):
        if isinstance(value, python):
            return _TYPE_WORDS[name]
    if isinstance(value, int | float):
        return "a number"
    return "empty" if value is None else type(value).__name__


def in_form(path: YPath) -> bool:
    return len(path) >= 4 and path[0] == "steps" and path[2] == "form"


def unknown_key(pos: Any, key: str, allowed: list[str], path: YPath, where: str) -> Diagnostic:
    hint = did_you_mean(key, allowed)
    if in_form(path):
        if key == "properties":
            hint = " MCP forms are flat: make each property a field of its own in this form."
        return error(
            pos,
            "form-keyword",
            f"'{key}' is not a keyword MCP forms allow: remove it; {where} may use: "
            f"{one_of(allowed)}.{hint}",
        )
    if key == "remember" and len(path) == 2 and path[0] == "steps":
        return error(
            pos,
            "unknown-key",
            f"unknown key 'remember' in {where}: only a confirm remembers a yes; make this "
            "question a confirm, or remove remember:",
        )
    if len(path) == 2 and path[0] == "steps" and key in STEP_KINDS:
        return error(
            pos,
            "unknown-key",
            f"'{key}' starts another step, inside {where}: a missing '- ' merged two steps; "
            f"write '- {key}: ...' on its own list item",
        )
    return error(
        pos,
        "unknown-key",
        f"unknown key '{key}' in {where}; expected one of: {one_of(allowed)}.{hint}",
    )


_EXAMPLE_VALUES = {
    "description": "TEXT (what the model reads about the tool)",
    "call": "module:function (the read-only handler)",
    "message": "TEXT (what the user reads)",
    "form": "{FIELD: {type: string}}",
    "steps": "[...] (read, ask, confirm and act steps)",
    "name": "NAME",
}


def missing_text(where: str, key: str, path: YPath) -> str:
    if not path and key == "kind":
        return "a spec document needs 'kind: tool' or 'kind: server': add it as the first line"
    if key == "type" and in_form(path):
        return f"{where} needs 'type': add one of: {', '.join(FORM_TYPES)}"
    example = _EXAMPLE_VALUES.get(key, "...")
    return f"{where} needs '{key}': add {key}: {example}"


def wrong_type_text(where: str, expected: Any, instance: Any) -> str:
    wanted = [expected] if isinstance(expected, str) else list(expected)
    words = " or ".join(_TYPE_WORDS.get(t, t) for t in wanted)
    message = f"{where} should be {words}, not {kind_of(instance)}"
    if "string" in wanted and isinstance(instance, int | float) and not isinstance(instance, bool):
        message += f' (quote it: "{instance}")'
    if wanted == ["boolean"] and isinstance(instance, str):
        message += " (write true or false, without quotes)"
    if wanted == ["array"] and isinstance(instance, dict):
        message += " (start each item on its own line with '- ')"
    return message


_SHORTHANDS: dict[YPath, str] = {("elicitation",): "elicitation: {enabled: true}"}


def type_hint(path: YPath, instance: Any, doc: Document) -> str:
    """Why a value has the wrong type, when the way it was written shows it."""
    written = _SHORTHANDS.get(path)
    if written is not None and not isinstance(instance, dict):
        return f"; write {written}"
    if in_form(path) and len(path) == 4 and str(path[3]) in FORM_COMMON | _KNOWN_KEYWORDS:
        return (
            f"; '{path[3]}' is read as a field of its own because it is not indented under the "
            "field above it: indent it further"
        )
    if instance is not None:
        return ""
    source = doc.locs.text.splitlines()
    line = doc.locs.key(path).line
    text = source[line - 1] if 0 < line <= len(source) else ""
    after = text.partition(":")[2]
    if after.lstrip().startswith("#"):
        value = after.strip()
        return (
            f"; a '#' after a space starts a comment, so the value is empty: quote it: "
            f"{path[-1]}: {quoted(value)}"
        )
    return "; nothing is written after it or indented under it: indent what belongs to it"


def bad_choice(err: ValidationError, path: YPath, where: str, doc: Document) -> Diagnostic:
    pos = doc.locs.value(path)
    expected: Any = err.validator_value
    allowed = expected if err.validator == "enum" else [expected]
    value = err.instance
    hint = did_you_mean(value, [str(a) for a in allowed]) if isinstance(value, str) else ""
    if path == ("kind",):
        return error(
            pos, "unknown-kind", f"unknown kind '{value}'; expected one of: server, tool.{hint}"
        )
    if in_form(path) and path[-2:] == ("items", "type"):
        return error(pos, "form-keyword", "the items of a multi-select must be type: string")
    if in_form(path) and path[-1] == "type":
        if value == "object":
            hint = (
                " MCP forms are flat: make each property of the object a field of its own "
                "in this form."
            )
        return error(
            pos,
            "form-type",
            f"'{value}' is not a type MCP forms can render; use one of: "
            f"{', '.join(FORM_TYPES)}.{hint}",
        )
    choices = ", ".join(str(a) for a in allowed)
    rule = "form-keyword" if in_form(path) else "bad-value"
    return error(pos, rule, f"{where} cannot be '{value}'; expected one of: {choices}.{hint}")


def bad_pattern(pos: Any, path: YPath, value: Any) -> Diagnostic:
    last = path[-1] if path else ""
    if path == ("name",):
        text = str(value)
        odd = describe_characters(text, "A-Za-z0-9_.-")
        what = f"has {odd}" if odd else "must be 1-128 characters long"
        return error(
            pos,
            "tool-name",
            f"tool name '{text}' {what}; MCP allows 1-128 characters of A-Z a-z 0-9 _ . -: "
            f"rename it, e.g. {tool_name(text)}",
        )
    if last in ("call", "act"):
        odd = describe_characters(str(value), "A-Za-z0-9_.:")
        has = f" (it has {odd})" if odd and "U+" in odd else ""
        return error(
            pos,
            "handler-name",
            f"'{value}' is not a handler name{has}; write module:function, like "
            "helpdesk:close_ticket",
        )
    return bad_name(pos, str(value))


def bad_name(pos: Any, value: str) -> Diagnostic:
    """``bad-name`` for a step or form field name that templates and handlers cannot use."""
    odd = describe_characters(value, "A-Za-z0-9_")
    has = f" (it has {odd})" if odd else " (it starts with a digit)"
    return error(
        pos,
        "bad-name",
        f"'{value}' is not a plain name{has}: use letters, digits and _, not starting with "
        f"a digit, so templates and handlers can use it: write {plain_name(value)}",
    )


def is_duration(path: YPath, data: Any = None) -> bool:
    """True for the places that take a duration (``timeout``, ``wait``, ``remember.for``...)."""
    return limit_at(path, data) is not None


def duration_problem(value: Any, path: YPath = (), data: Any = None) -> str:
    """What is wrong with a written duration at ``path``, with a fix that key accepts."""
    limit = limit_at(path, data) or Limit(None)
    if limit.zero and not isinstance(value, bool) and value == 0:
        return "0 has no unit: write 0s (not waiting at all)"
    try:
        parse_duration(value, maximum=limit.longest)
    except DurationError as exc:
        bound = f" (the step's {limit.bound_by})" if limit.bound_by else ""
        return str(exc).replace("the most allowed here", "the most allowed here" + bound, 1)
    return "write a duration like 30s, 10m, 8h or 7d"


def bad_scope(pos: Any, value: str) -> Diagnostic:
    odd = describe_characters(value.replace(":", ""), "!#-9;-\\[\\]-~")
    has = f" (it has {odd})" if odd else " (it has an empty part around a ':')"
    return error(
        pos,
        "bad-value",
        f"'{value}' is not a scope{has}: a scope is printable ASCII without spaces or quotes, "
        f"in parts joined by ':', like tickets:read; write {_scope(value)}",
    )


def _scope(value: str) -> str:
    parts = [re.sub(r"[^!#-9;-\[\]-~]+", "_", p.strip()) for p in value.split(":")]
    return ":".join(p for p in parts if p) or "tickets:read"
