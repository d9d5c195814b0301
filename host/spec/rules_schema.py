"""The first pass: every document against the spec language's JSON Schema, errors at their places.

Each ``jsonschema`` error is turned into a diagnostic with a stable rule id and a message that names
the key and what would fix it, at the exact key or value it is about.
"""

from __future__ import annotations

import re
from functools import cache
from typing import Any

from jsonschema import Draft7Validator
from jsonschema.exceptions import ValidationError

from host.spec.diagnostics import Diagnostic
from host.spec.durations import DurationError, parse_duration
from host.spec.load import Document, YPath
from host.spec.naming import describe_characters, plain_name, tool_name
from host.spec.rules import did_you_mean, error, one_of
from host.spec.schema import FORM_COMMON, FORM_KEYWORDS, FORM_TYPES, flat_schema
from host.spec.yaml_hints import quoted

__all__ = ["bad_name", "check_shape", "describe"]

_STEP_KINDS = ("read", "ask", "confirm", "act")
_KNOWN_KEYWORDS = frozenset().union(*FORM_KEYWORDS.values())
_TYPE_WORDS = {
    "object": "a mapping",
    "array": "a list",
    "string": "text",
    "integer": "an integer",
    "number": "a number",
    "boolean": "true or false",
    "null": "empty",
}


@cache
def _validator() -> Draft7Validator:
    return Draft7Validator(flat_schema())


def check_shape(doc: Document) -> tuple[list[Diagnostic], bool]:
    """Every way ``doc`` breaks the spec language's schema, one diagnostic per problem.

    Returns:
        The diagnostics, and whether the document can still be built into the model: a wrong
        value (an unknown key, a bad name, a value outside a list) leaves the shape intact, so the
        later rules still run and report their problems in the same run; a wrong type, a missing
        key or a step of no kind does not.
    """
    found: dict[tuple[Any, ...], Diagnostic] = {}
    buildable = True
    for err in _validator().iter_errors(doc.data):
        buildable = buildable and _cosmetic(err)
        for diag in _map(err, doc):
            found.setdefault((diag.pos, diag.rule, diag.message), diag)
    return list(found.values()), buildable


_COSMETIC = frozenset(
    {"additionalProperties", "enum", "const", "pattern", "minLength", "maxLength", "minimum"}
    | {"minItems", "minProperties", "uniqueItems"}
)


def _cosmetic(err: ValidationError) -> bool:
    """True when the error leaves the document buildable (see :func:`check_shape`)."""
    path = tuple(err.absolute_path)
    if err.validator == "additionalProperties" and len(path) == 2 and path[0] == "steps":
        # NOTE: a step with two kind keys (`act:` inside a confirm) would lose one of its halves.
        instance: Any = err.instance
        if any(k in _STEP_KINDS for k in instance):
            return False
    if path == ("kind",):
        return False
    return err.validator in _COSMETIC or _is_duration(path)


def _kind_of(value: Any) -> str:
    if isinstance(value, bool):
        return "true or false"
    for name, python in (("object", dict), ("array", list), ("string", str)):
        if isinstance(value, python):
            return _TYPE_WORDS[name]
    if isinstance(value, int | float):
        return "a number"
    return "empty" if value is None else type(value).__name__


def describe(path: YPath, data: Any) -> str:
    """A short human name for the thing at ``path`` (``the read step 'ticket'``)."""
    kind = data.get("kind") if isinstance(data, dict) else None
    if not path:
        return {"tool": "a tool", "server": "the server document"}.get(str(kind), "a spec document")
    head = path[0]
    if head == "steps" and len(path) >= 2 and isinstance(path[1], int):
        step = _at(data, path[:2])
        if len(path) == 2:
            label = next((k for k in _STEP_KINDS if isinstance(step, dict) and k in step), None)
            if label is None:
                return f"step {path[1] + 1}"
            named = step.get(label) if label != "act" else None
            return f"the {label} step" + (f" '{named}'" if isinstance(named, str) else "")
        if len(path) >= 4 and path[2] == "form":
            where = f"form field '{path[3]}'"
            return where if len(path) == 4 else f"the {path[4]} of {where}"
    if head == "examples" and len(path) >= 2 and isinstance(path[1], int):
        if len(path) == 2:
            return f"example {path[1] + 1}"
        if len(path) == 4 and path[2] == "answers":
            return f"the answer to '{path[3]}'"
    last = path[-1]
    return f"item {last + 1}" if isinstance(last, int) else f"'{last}'"


def _at(data: Any, path: YPath) -> Any:
    for part in path:
        if isinstance(data, dict) and isinstance(part, str):
            data = data.get(part)
        elif isinstance(data, list) and isinstance(part, int) and part < len(data):
            data = data[part]
        else:
            return None
    return data


def _in_form(path: YPath) -> bool:
    return len(path) >= 4 and path[0] == "steps" and path[2] == "form"


def _map(err: ValidationError, doc: Document) -> list[Diagnostic]:
    path: YPath = tuple(err.absolute_path)
    locs = doc.locs
    where = describe(path, doc.data)
    instance: Any = err.instance
    keyword = err.validator
    # NOTE: jsonschema types these as "maybe unset"; for the keywords mapped here they are set.
    subschema: Any = err.schema
    expected: Any = err.validator_value
    if "propertyNames" in err.schema_path:
        return [bad_name(locs.key((*path, str(instance))), str(instance))]
    if keyword == "additionalProperties":
        allowed = list(subschema.get("properties", {}))
        field_type = instance.get("type") if _in_form(path) and len(path) == 4 else None
        if isinstance(field_type, str) and field_type in FORM_KEYWORDS:
            allowed = sorted(FORM_COMMON | FORM_KEYWORDS[field_type])
            where = f"{where} ({field_type})"
        extras = [k for k in instance if k not in allowed]
        return [_unknown(locs.key((*path, k)), k, allowed, path, where) for k in extras]
    if keyword == "required":
        missing = [k for k in expected if k not in instance]
        pos = locs.key(path) if path else locs.value(path)
        return [error(pos, "missing-key", _missing(where, k, path)) for k in missing]
    if keyword == "anyOf" and path[:1] == ("steps",):
        keys = list(instance) if isinstance(instance, dict) else []
        hint = next((h for k in keys if (h := did_you_mean(k, _STEP_KINDS))), "")
        return [
            error(
                locs.value(path),
                "step-kind",
                f"{where} is none of read, ask, confirm, act; start it with one of them.{hint}",
            )
        ]
    pos = locs.value(path)
    if _is_duration(path) and keyword in ("type", "pattern"):
        return [error(pos, "duration", f"{where}: {_duration_problem(instance)}")]
    if path[-2:-1] == ("scopes",) and keyword == "pattern":
        return [_bad_scope(pos, str(instance))]
    if keyword == "uniqueItems":
        return [error(pos, "bad-value", f"{where} lists the same value twice: remove one")]
    if keyword == "type":
        message = _wrong_type(where, expected, instance) + _type_hint(path, instance, doc)
        return [error(pos, "wrong-type", message)]
    if keyword in ("enum", "const"):
        return [_bad_choice(err, path, where, doc)]
    if keyword in ("pattern", "minLength", "maxLength"):
        return [_bad_pattern(pos, path, instance)]
    if keyword == "minProperties" and path[-1:] == ("form",):
        return [
            error(
                pos,
                "bad-value",
                "a form needs at least one field: add one under form:, or use a confirm step "
                "for a yes/no question",
            )
        ]
    rule = "form-keyword" if _in_form(path) else "bad-value"
    return [error(pos, rule, f"{where}: {err.message}")]


def _unknown(pos: Any, key: str, allowed: list[str], path: YPath, where: str) -> Diagnostic:
    hint = did_you_mean(key, allowed)
    if _in_form(path):
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
    if len(path) == 2 and path[0] == "steps" and key in _STEP_KINDS:
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


def _missing(where: str, key: str, path: YPath) -> str:
    if not path and key == "kind":
        return "a spec document needs 'kind: tool' or 'kind: server': add it as the first line"
    if key == "type" and _in_form(path):
        return f"{where} needs 'type': add one of: {', '.join(FORM_TYPES)}"
    example = _EXAMPLE_VALUES.get(key, "...")
    return f"{where} needs '{key}': add {key}: {example}"


def _wrong_type(where: str, expected: Any, instance: Any) -> str:
    wanted = [expected] if isinstance(expected, str) else list(expected)
    words = " or ".join(_TYPE_WORDS.get(t, t) for t in wanted)
    message = f"{where} should be {words}, not {_kind_of(instance)}"
    if "string" in wanted and isinstance(instance, int | float) and not isinstance(instance, bool):
        message += f' (quote it: "{instance}")'
    if wanted == ["boolean"] and isinstance(instance, str):
        message += " (write true or false, without quotes)"
    if wanted == ["array"] and isinstance(instance, dict):
        message += " (start each item on its own line with '- ')"
    return message


_SHORTHANDS: dict[YPath, str] = {("elicitation",): "elicitation: {enabled: true}"}


def _type_hint(path: YPath, instance: Any, doc: Document) -> str:
    """Why a value has the wrong type, when the way it was written shows it."""
    written = _SHORTHANDS.get(path)
    if written is not None and not isinstance(instance, dict):
        return f"; write {written}"
    if _in_form(path) and len(path) == 4 and str(path[3]) in FORM_COMMON | _KNOWN_KEYWORDS:
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


def _bad_choice(err: ValidationError, path: YPath, where: str, doc: Document) -> Diagnostic:
    pos = doc.locs.value(path)
    expected: Any = err.validator_value
    allowed = expected if err.validator == "enum" else [expected]
    value = err.instance
    hint = did_you_mean(value, [str(a) for a in allowed]) if isinstance(value, str) else ""
    if path == ("kind",):
        return error(
            pos, "unknown-kind", f"unknown kind '{value}'; expected one of: server, tool.{hint}"
        )
    if _in_form(path) and path[-2:] == ("items", "type"):
        return error(pos, "form-keyword", "the items of a multi-select must be type: string")
    if _in_form(path) and path[-1] == "type":
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
    rule = "form-keyword" if _in_form(path) else "bad-value"
    return error(pos, rule, f"{where} cannot be '{value}'; expected one of: {choices}.{hint}")


def _bad_pattern(pos: Any, path: YPath, value: Any) -> Diagnostic:
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


def _is_duration(path: YPath) -> bool:
    """True for the places that take a duration (``timeout``, ``timeouts.*``, ``remember.for``)."""
    return (
        (len(path) == 3 and path[0] == "steps" and path[2] == "timeout")
        or (len(path) == 2 and path[0] == "timeouts")
        or path[-2:] == ("remember", "for")
    )


def _duration_problem(value: Any) -> str:
    try:
        parse_duration(value)
    except DurationError as exc:
        return str(exc)
    return "write a duration like 30s, 10m, 8h or 7d"


def _bad_scope(pos: Any, value: str) -> Diagnostic:
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
