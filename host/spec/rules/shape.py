"""The first pass: every document against the spec language's JSON Schema, errors at their places.

Each ``jsonschema`` error is turned into a diagnostic with a stable rule id and a message that names
the key and what would fix it, at the exact key or value it is about.
"""

from __future__ import annotations

import copy
import dataclasses
from functools import cache
from typing import Any

from jsonschema import Draft7Validator
from jsonschema.exceptions import ValidationError

from host.spec.diagnostics import Diagnostic
from host.spec.model import STEP_KINDS
from host.spec.quick import QuickCheck
from host.spec.rulebook import did_you_mean, error
from host.spec.schema import flat_schema
from host.spec.shape_messages import (
    bad_choice,
    bad_name,
    bad_pattern,
    bad_scope,
    duration_problem,
    in_form,
    is_duration,
    missing_text,
    type_hint,
    unknown_key,
    wrong_type_text,
)
from host.spec.vocabulary import FORM_COMMON, FORM_KEYWORDS
from host.spec.yaml import Document, YPath

__all__ = ["bad_name", "check_shape", "describe", "mended"]


@cache
def _validator() -> Draft7Validator:
    return Draft7Validator(flat_schema())


@cache
def _quick() -> QuickCheck:
    return QuickCheck(flat_schema(), 7)


def mended(doc: Document) -> Document:
    """``doc`` with each step's keys that break the schema left out, so the order of its steps
    can still be judged in the run that reports them (the rest waits for them to be fixed)."""
    data = copy.deepcopy(doc.data)
    steps = data.get("steps") if isinstance(data, dict) else None
    for err in _validator().iter_errors(doc.data):
        path = tuple(err.absolute_path)
        if len(path) < 3 or path[0] != "steps" or not isinstance(steps, list):
            continue
        step = steps[path[1]] if isinstance(path[1], int) and path[1] < len(steps) else None
        if isinstance(step, dict) and path[2] not in STEP_KINDS:
            step.pop(path[2], None)
    return dataclasses.replace(doc, data=data)


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
    errors = () if _quick().passes(doc.data) else _validator().iter_errors(doc.data)
    for err in errors:
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
        if any(k in STEP_KINDS for k in instance):
            return False
    if path == ("kind",):
        return False
    return err.validator in _COSMETIC or is_duration(path)


def describe(path: YPath, data: Any) -> str:
    """A short human name for the thing at ``path`` (``the read step 'ticket'``)."""
    kind = data.get("kind") if isinstance(data, dict) else None
    if not path:
        return {"tool": "a tool", "server": "the server document"}.get(str(kind), "a spec document")
    head = path[0]
    if head == "steps" and len(path) >= 2 and isinstance(path[1], int):
        step = _at(data, path[:2])
        if len(path) == 2:
            label = next((k for k in STEP_KINDS if isinstance(step, dict) and k in step), None)
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
        field_type = instance.get("type") if in_form(path) and len(path) == 4 else None
        if isinstance(field_type, str) and field_type in FORM_KEYWORDS:
            allowed = sorted(FORM_COMMON | FORM_KEYWORDS[field_type])
            where = f"{where} ({field_type})"
        extras = [k for k in instance if k not in allowed]
        return [unknown_key(locs.key((*path, k)), k, allowed, path, where) for k in extras]
    if keyword == "required":
        missing = [k for k in expected if k not in instance]
        pos = locs.key(path) if path else locs.value(path)
        return [error(pos, "missing-key", missing_text(where, k, path)) for k in missing]
    if keyword == "anyOf" and path[:1] == ("steps",):
        keys = list(instance) if isinstance(instance, dict) else []
        hint = next((h for k in keys if (h := did_you_mean(k, STEP_KINDS))), "")
        return [
            error(
                locs.value(path),
                "step-kind",
                f"{where} is none of read, ask, confirm, act; start it with one of them.{hint}",
            )
        ]
    pos = locs.value(path)
    if is_duration(path, doc.data) and keyword in ("type", "pattern"):
        problem = duration_problem(instance, path, doc.data)
        return [error(pos, "duration", f"{where}: {problem}")]
    if path[-2:-1] == ("scopes",) and keyword == "pattern":
        return [bad_scope(pos, str(instance))]
    if keyword == "uniqueItems":
        return [error(pos, "bad-value", f"{where} lists the same value twice: remove one")]
    if keyword == "type":
        message = wrong_type_text(where, expected, instance) + type_hint(path, instance, doc)
        return [error(pos, "wrong-type", message)]
    if keyword in ("enum", "const"):
        return [bad_choice(err, path, where, doc)]
    if keyword in ("pattern", "minLength", "maxLength"):
        return [bad_pattern(pos, path, instance)]
    if keyword == "minProperties" and path[-1:] == ("form",):
        return [
            error(
                pos,
                "bad-value",
                "a form needs at least one field: add one under form:, or use a confirm step "
                "for a yes/no question",
            )
        ]
    rule = "form-keyword" if in_form(path) else "bad-value"
    return [error(pos, rule, f"{where}: {err.message}")]
