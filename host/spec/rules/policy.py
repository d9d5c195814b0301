"""What a spec asks of the running host: how long remembered approvals last, what audit hides.

The schema pass checks the shape of ``remember:``, ``timeout:``, ``timeouts:``, ``scopes:`` and
``audit:``; the rules here check what a shape cannot say: that a remembered yes lasts at most 30
days, that ``audit.redact`` names fields the tool has, and that no ``remember.key`` writes a
redacted field into the store (an approval's key is kept, and listed, as rendered).
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

from jinja2 import TemplateSyntaxError

from host.spec.build import ToolDoc, is_zero
from host.spec.diagnostics import Diagnostic
from host.spec.durations import DURATION_PATTERN, DurationError, format_duration, parse_duration
from host.spec.model import APPROVE_EXPIRES_MAX_S, REMEMBER_MAX_S, Approve, Ask, Confirm
from host.spec.rulebook import did_you_mean, error, one_of
from host.spec.rules.facts import ToolFacts
from host.spec.rules.templates import used_names
from host.spec.yaml import Document, YPath

__all__ = ["check_durations", "check_policy"]


def check_policy(facts: ToolFacts) -> list[Diagnostic]:
    """``redact-field``: ``audit.redact`` names only the tool's input and form fields, and no
    ``remember.key`` uses one of them."""
    doc = facts.doc
    return _redact(doc) + _redacted_keys(doc)


def check_durations(doc: Document) -> list[Diagnostic]:
    """``duration`` for durations the schema's pattern lets through: 0s, or a remember past 30d.

    NOTE: text that does not even look like a duration was reported by the schema pass.
    """
    found: list[Diagnostic] = []
    for path, value, maximum in _durations(doc.data):
        if not isinstance(value, str) or not re.match(DURATION_PATTERN, value.strip()):
            continue
        try:
            parse_duration(value, maximum=maximum)
        except DurationError as exc:
            fix = ""
            if maximum is not None and "longer" in str(exc):
                what = "a remembered yes lasts" if maximum == REMEMBER_MAX_S else "a request lasts"
                most = format_duration(maximum)
                fix = f": {what} at most {most}; write {most} or less"
            found.append(error(doc.locs.value(path), "duration", f"{exc}{fix}"))
    return found


def _durations(data: Any) -> Iterator[tuple[YPath, Any, float | None]]:
    """Every duration written in a document: its path, value and the largest allowed."""
    if not isinstance(data, dict):
        return
    timeouts = data.get("timeouts")
    if isinstance(timeouts, dict):
        for key in ("read", "act"):
            if key in timeouts:
                yield ("timeouts", key), timeouts[key], None
    steps = data.get("steps")
    for index, step in enumerate(steps if isinstance(steps, list) else []):
        if not isinstance(step, dict):
            continue
        if "timeout" in step:
            yield ("steps", index, "timeout"), step["timeout"], None
        if "wait" in step and not is_zero(step["wait"]):
            yield ("steps", index, "wait"), step["wait"], APPROVE_EXPIRES_MAX_S
        if "expires" in step:
            yield ("steps", index, "expires"), step["expires"], APPROVE_EXPIRES_MAX_S
        remember = step.get("remember")
        if isinstance(remember, dict) and "for" in remember:
            yield ("steps", index, "remember", "for"), remember["for"], REMEMBER_MAX_S


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
            used = sorted(used_names(key) & hidden)
        except TemplateSyntaxError:  # NOTE: the template rules report a key that does not parse
            continue
        if used:
            found.append(
                error(
                    doc.locs.value(("steps", index, "remember", "key")),
                    "redact-field",
                    f"remember.key uses {', '.join(repr(n) for n in used)}, which audit.redact "
                    "keeps out of the "
                    "store, but an approval's key is stored (and listed by host approvals list) "
                    "as rendered; leave the field out of the key, or remove key: to use the "
                    "default key, a digest of the arguments",
                )
            )
    return found
