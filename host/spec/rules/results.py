"""A question's results must fit the tool's ``output`` schema, as the act's result must.

A tool that declares ``output:`` promises structured content that fits it in every result that is
not an error; clients check and reject one that does not. The results a call ends with when the
user says no (``declined``, ``cancelled``, ``unticked``) are results too: a text (the host's
default when none is written) carries no structured content, and a mapping must fit the schema.
"""

from __future__ import annotations

import json
from typing import Any

from jsonschema import Draft202012Validator
from jsonschema.exceptions import ValidationError

from host.spec.build import ToolDoc
from host.spec.diagnostics import Diagnostic
from host.spec.memo import memo
from host.spec.model import Act, Ask, Confirm
from host.spec.rulebook import error
from host.spec.rules.facts import ToolFacts
from host.spec.templates import is_template

__all__ = ["check_results"]

_SINGLE = "{{"


class _Unknown:
    """A ``{{ expression }}`` value: its type is known only when it is rendered."""


_UNKNOWN = _Unknown()


def check_results(facts: ToolFacts) -> list[Diagnostic]:
    """``result-output`` for every declined, cancelled, unticked and busy result of the tool."""
    doc = facts.doc
    tool = doc.tool
    if tool.output is None:
        return []
    schema = json.dumps(tool.output, sort_keys=True, default=str)
    if _validator(schema) is None:
        return []  # NOTE: an invalid output schema is reported by json-schema
    found: list[Diagnostic] = []
    for index, step in enumerate(tool.steps):
        if isinstance(step, Act) and step.lock:
            endings: tuple[str, ...] = ("busy",)
        elif isinstance(step, Ask | Confirm):
            endings = ("declined", "cancelled")
            if isinstance(step, Confirm):
                endings = (*endings, "unticked")
        else:
            continue
        raw = doc.data["steps"][index]
        missing = [e for e in endings if raw.get(e) is None]
        if missing and isinstance(step, Act):
            found.append(_missing_busy(doc, index, step.call))
        elif missing and not isinstance(step, Act):
            found.append(_missing(doc, index, step.name, missing))
        for ending in endings:
            value = raw.get(ending)
            if value is not None:
                found.extend(_check(doc, schema, ("steps", index, ending), value))
    return found


@memo(256)
def _validator(text: str) -> Draft202012Validator | None:
    """A validator of the output schema (cached by its text: generated specs repeat it)."""
    schema = json.loads(text)
    try:
        Draft202012Validator.check_schema(schema)
    except Exception:  # any schema problem: json-schema reports it
        return None
    return Draft202012Validator(schema)


def _missing(doc: ToolDoc, index: int, name: str, missing: list[str]) -> Diagnostic:
    keys = ", ".join(f"{m}:" for m in missing)
    return error(
        doc.locs.value(("steps", index)),
        "result-output",
        f"'{name}' has no {keys} result, and '{doc.tool.name}' declares output:, so a user's no "
        "would end the call with the host's default text, which carries no structured content; "
        f"clients reject such a result: add {keys} with a mapping that fits output (like "
        "{closed: false, reason: ...})",
    )


def _missing_busy(doc: ToolDoc, index: int, act: str) -> Diagnostic:
    return error(
        doc.locs.value(("steps", index, "lock")),
        "result-output",
        f"the act {act} has a lock: but no busy: result, and '{doc.tool.name}' declares output:, "
        "so a call that does not get the lock would end with the host's default text, which "
        "carries no structured content; clients reject such a result: add busy: with a mapping "
        "that fits output (like {restarted: false, reason: ...})",
    )


def _check(doc: ToolDoc, schema: str, path: tuple[Any, ...], value: Any) -> list[Diagnostic]:
    if isinstance(value, str) and not _single_expression(value):
        return [
            error(
                doc.locs.value(path),
                "result-output",
                f"this {path[-1]} result is a text, which carries no structured content, but "
                f"'{doc.tool.name}' declares output: and clients reject a result without it; "
                "write a mapping that fits output",
            )
        ]
    found: list[Diagnostic] = []
    marked = json.dumps(_marked(value), sort_keys=True)
    for where, extra, text in _problems(schema, marked):
        pos = doc.locs.value((*path, *where))
        if extra is not None:
            pos = doc.locs.key((*path, *where, extra))
        found.append(
            error(
                pos,
                "result-output",
                f"this {path[2]} result does not fit the tool's output schema: {text}; "
                "clients reject a result that does not fit: change the result or the schema",
            )
        )
    return found


# NOTE: marks for template strings, so that the same result written in many tools (generated
# specs, copies) is checked once: a `{{ expression }}` alone may render to any type; a text
# with a template in it renders to a text of unknown content.
_ANY = "\0{{any}}"
_TEXT = "\0{{text}}"


class _Text(str):
    """A text whose content is known only once its template is rendered."""


@memo(4096)
def _problems(schema: str, marked: str) -> tuple[tuple[tuple[Any, ...], str | None, str], ...]:
    """(path, extra key, message) of each way the marked result breaks the output schema."""
    validator = _validator(schema)
    assert validator is not None
    found = []
    for err in validator.iter_errors(_restore(json.loads(marked))):
        if _about_unknown(err):
            continue
        extra = None
        if err.validator == "additionalProperties" and isinstance(err.instance, dict):
            known = err.schema.get("properties", {}) if isinstance(err.schema, dict) else {}
            extra = next((k for k in err.instance if k not in known), None)
        found.append((tuple(err.absolute_path), extra, _text(err)))
    return tuple(found)


def _single_expression(text: str) -> bool:
    stripped = text.strip()
    return stripped.startswith(_SINGLE) and stripped.endswith("}}") and stripped.count("{{") == 1


def _marked(value: Any) -> Any:
    """``value`` with each template string replaced by its mark."""
    if isinstance(value, str):
        if not is_template(value):
            return value
        return _ANY if _single_expression(value) else _TEXT
    if isinstance(value, dict):
        return {k: _marked(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_marked(v) for v in value]
    return value


def _restore(value: Any) -> Any:
    """The marked value with each mark made a value of unknown type or unknown text."""
    if value == _ANY:
        return _UNKNOWN
    if value == _TEXT:
        return _Text("")
    if isinstance(value, dict):
        return {k: _restore(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_restore(v) for v in value]
    return value


def _about_unknown(err: ValidationError) -> bool:
    """True for an error about what only rendering can tell (a value's type, a text's words)."""
    return err.instance is _UNKNOWN or (isinstance(err.instance, _Text) and err.validator != "type")


def _text(err: ValidationError) -> str:
    if err.validator == "required":
        return err.message.replace("is a required property", "is required by output")
    return err.message
