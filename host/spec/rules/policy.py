"""What a spec asks of the running host: how long remembered approvals last, what audit hides.

The schema pass checks the shape of ``remember:``, ``timeout:``, ``timeouts:``, ``scopes:`` and
``audit:``; the rules here check what a shape cannot say: that a remembered yes lasts at most 30
days, that ``audit.redact`` names fields the tool has, that no ``remember.key`` and no act's
``lock:`` writes a redacted field into the store (an approval's key and a lock's name are kept,
and listed, in clear), and that a
``remember.key`` covers every input the act receives (else one yes approves other calls too).
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

from jinja2 import TemplateSyntaxError

from host.spec.build import ToolDoc, is_zero
from host.spec.diagnostics import Diagnostic
from host.spec.duration_limits import Limit, limit_at
from host.spec.durations import DURATION_PATTERN, DurationError, format_duration, parse_duration
from host.spec.handlers import HandlerProblem
from host.spec.model import (
    Act,
    Approve,
    Ask,
    Confirm,
)
from host.spec.rulebook import did_you_mean, error, one_of, warning
from host.spec.rules.facts import ToolFacts
from host.spec.rules.templates import used_names
from host.spec.yaml import Document, YPath

__all__ = [
    "check_durations",
    "check_policy",
    "check_remember_blocks",
    "check_remember_keys",
    "key_names",
]


def check_policy(facts: ToolFacts) -> list[Diagnostic]:
    """``redact-field``: ``audit.redact`` names only the tool's input and form fields, and no
    ``remember.key`` or ``lock:`` uses one of them."""
    doc = facts.doc
    return _redact(doc) + _redacted_keys(doc) + _redacted_locks(doc)


def key_names(key: str | tuple[str, ...]) -> frozenset[str]:
    """The names a ``remember.key`` reads: a template's, or the list itself.

    Raises:
        jinja2.TemplateSyntaxError: a template key does not parse.
    """
    return used_names(key) if isinstance(key, str) else frozenset(key)


def check_remember_keys(facts: ToolFacts) -> list[Diagnostic]:
    """``remember-key``: a key that leaves out (unredacted) inputs the act receives lets one yes
    approve calls that differ in them (a yes for ``web/prod`` also covering ``force: true``)."""
    doc, index = facts.doc, facts.handlers
    act, tool = doc.tool.act, doc.tool
    inputs = set((tool.input.get("properties") or {}) if isinstance(tool.input, dict) else ())
    if act is None or not inputs:
        return []
    try:
        params = index.resolve(act.call).params
    except HandlerProblem:  # NOTE: the handler rules report it
        return []
    # NOTE: a redacted input cannot be in a key (it is stored as rendered): redact-field's fix
    # (remove key:, whose default digest covers it) is the only one, so it is not named here.
    received = sorted(inputs & {p.name for p in params or ()} - set(tool.audit_redact))
    found: list[Diagnostic] = []
    for i, step in enumerate(tool.steps):
        if not isinstance(step, Confirm) or step.remember is None or step.remember.key is None:
            continue
        try:
            left_out = [name for name in received if name not in key_names(step.remember.key)]
        except TemplateSyntaxError:
            continue
        if left_out:
            found.append(_key_leaves_out(doc, i, act.call, step.remember.key, left_out))
    return found


def check_remember_blocks(facts: ToolFacts) -> list[Diagnostic]:
    """``remember-key-blocks``: a key template with ``{% %}`` or ``{# #}`` is used as it renders,
    so its values can run together (``a/b`` + ``c`` and ``a`` + ``b/c`` make one key).

    NOTE: a warning, not an error: such keys keep the keys they always had (changing how they
    render would forget every yes remembered under them).
    """
    doc = facts.doc
    found: list[Diagnostic] = []
    for index, step in enumerate(doc.tool.steps):
        key = step.remember.key if isinstance(step, Confirm | Approve) and step.remember else None
        if isinstance(key, str) and ("{%" in key or "{#" in key):
            found.append(
                warning(
                    doc.locs.value(("steps", index, "remember", "key")),
                    "remember-key-blocks",
                    "remember.key has {% %} or {# #} blocks, so it is used as it renders and "
                    "its values are not escaped: two calls whose values differ can share a "
                    "key (a/b + c and a + b/c), and one yes approves both; write the key as a "
                    "list of names (key: [service, environment]) or with {{ }} expressions only",
                )
            )
    return found


def _key_leaves_out(
    doc: ToolDoc, index: int, act: str, key: str | tuple[str, ...], left_out: list[str]
) -> Diagnostic:
    listed = ", ".join(repr(n) for n in left_out)
    names = sorted(key_names(key) | set(left_out))
    pronoun = "them" if len(left_out) > 1 else "it"
    return warning(
        doc.locs.value(("steps", index, "remember", "key")),
        "remember-key",
        f"remember.key leaves out {listed}, which the act {act} receives: a remembered yes "
        f"also approves calls that differ only in {listed}; add {pronoun} to the key "
        f"(key: [{', '.join(names)}]), or remove key: to use the default key, a "
        "digest of every argument",
    )


def check_durations(doc: Document) -> list[Diagnostic]:
    """``duration`` for durations the schema's pattern lets through: 0s where a wait is not
    optional, or past the longest the key allows (:mod:`host.spec.duration_limits`).

    NOTE: text that does not even look like a duration was reported by the schema pass.
    """
    found: list[Diagnostic] = []
    for path, value in _durations(doc.data):
        limit = limit_at(path, doc.data)
        if not isinstance(value, str) or not re.match(DURATION_PATTERN, value.strip()):
            continue
        if limit is None or (limit.zero and is_zero(value)):
            continue
        try:
            parse_duration(value, maximum=limit.longest)
        except DurationError as exc:
            fix = _fix(path, exc, limit)
            found.append(error(doc.locs.value(path), "duration", f"{exc}{fix}"))
    return found


def _fix(path: YPath, exc: DurationError, limit: Limit) -> str:
    """What to write instead, where the key has a rule of its own (a maximum, a default)."""
    too_long = "longer" in str(exc)
    most = format_duration(limit.longest) if limit.longest is not None else ""
    if not too_long:
        if limit.zero:
            return "; or write 0s to not wait at all"
        return ""
    if path[-1] == "wait" and limit.bound_by:
        return (
            f": a call waits at most as long as its request can be decided (the step's "
            f"expires); write {most} or less, or a longer expires"
        )
    if path[-1] == "wait":
        return (
            f": a retry waits for the page at most {most} (it holds its request open); "
            f"write {most} or less"
        )
    if path[-1] == "lock_wait":
        return (
            f": a call waits for a lock at most {most} (it holds its request open meanwhile); "
            f"write {most} or less"
        )
    if path[-1] == "for":
        return f": a remembered yes lasts at most {most}; write {most} or less"
    return f": a request lasts at most {most}; write {most} or less"


def _durations(data: Any) -> Iterator[tuple[YPath, Any]]:
    """Every duration written in a document: its path and value."""
    if not isinstance(data, dict):
        return
    timeouts = data.get("timeouts")
    if isinstance(timeouts, dict):
        for key in ("read", "act"):
            if key in timeouts:
                yield ("timeouts", key), timeouts[key]
    steps = data.get("steps")
    for index, step in enumerate(steps if isinstance(steps, list) else []):
        if not isinstance(step, dict):
            continue
        for key in ("timeout", "wait", "expires", "lock_wait"):
            if key in step:
                yield ("steps", index, key), step[key]
        remember = step.get("remember")
        if isinstance(remember, dict) and "for" in remember:
            yield ("steps", index, "remember", "for"), remember["for"]


def _redact(doc: ToolDoc) -> list[Diagnostic]:
    tool = doc.tool
    properties = tool.input.get("properties")
    fields = set(properties) if isinstance(properties, dict) else set()
    for step in tool.steps:
        if isinstance(step, Ask):
            fields |= {f.name for f in step.fields}
    found: list[Diagnostic] = []
    for index, name in enumerate(tool.audit_redact):
        if name in fields:
            continue
        listed = one_of(fields) if fields else "none"
        hint = did_you_mean(name, fields) or " Use one of them, or remove it."
        found.append(
            error(
                doc.locs.value(("audit", "redact", index)),
                "redact-field",
                f"audit.redact names '{name}', which is neither an input nor a form field of "
                f"'{tool.name}', so nothing would be redacted; its fields: {listed}.{hint}",
            )
        )
    return found


def _redacted_keys(doc: ToolDoc) -> list[Diagnostic]:
    hidden = set(doc.tool.audit_redact)
    found: list[Diagnostic] = []
    for index, step in enumerate(doc.tool.steps):
        key = step.remember.key if isinstance(step, Confirm | Approve) and step.remember else None
        if not hidden or key is None:
            continue
        try:
            used = sorted(key_names(key) & hidden)
        except TemplateSyntaxError:  # NOTE: the template rules report a key that does not parse
            continue
        if used:
            found.append(
                error(
                    doc.locs.value(("steps", index, "remember", "key")),
                    "redact-field",
                    f"remember.key uses {', '.join(repr(n) for n in used)}, which audit.redact "
                    "keeps out of the store, but an approval's key is stored (and listed by "
                    "host approvals remembered) as rendered; leave the field out of the key, or "
                    "remove key: to use the default key, a digest of the arguments",
                )
            )
    return found


def _redacted_locks(doc: ToolDoc) -> list[Diagnostic]:
    """A ``lock:`` name that ``audit.redact`` hides: a lock's key holds the values in clear."""
    hidden = set(doc.tool.audit_redact)
    found: list[Diagnostic] = []
    for index, step in enumerate(doc.tool.steps):
        if not hidden or not isinstance(step, Act):
            continue
        for at, name in enumerate(step.lock):
            if name in hidden:
                found.append(
                    error(
                        doc.locs.value(("steps", index, "lock", at)),
                        "redact-field",
                        f"lock names {name!r}, which audit.redact keeps out of the store, but a "
                        "lock's key holds its values in clear (the store's locks, Redis keys); "
                        "leave the field out of lock:, or lock on another field that names the "
                        "same resource",
                    )
                )
    return found
