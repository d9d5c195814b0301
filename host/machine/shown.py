"""Texts rendered for people other than the caller (approvers): redacted fields read ``[redacted]``.

An approve step's message, and the questions approvers see as the caller saw them, are rendered
from a scope in which every field ``audit.redact`` names (an input, a form field, a URL ask's
secret) reads ``[redacted]``; whatever still carries a redacted value in clear (another name
bound to it, a read that returned it) is scrubbed from the text as the log does.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from host.logs import REDACTED, scrub, secret_values
from host.spec.templates import Renderer

__all__ = ["render_shown", "shown_scope"]


def shown_scope(scope: Mapping[str, Any], hidden: frozenset[str]) -> dict[str, Any]:
    """``scope`` with each field in ``hidden`` (at the top, or in an answer's content) redacted."""
    shown: dict[str, Any] = {}
    for name, value in scope.items():
        if name in hidden:
            shown[name] = REDACTED
        elif isinstance(value, Mapping) and isinstance(value.get("content"), Mapping):
            content = {k: REDACTED if k in hidden else v for k, v in value["content"].items()}
            shown[name] = {**value, "content": content}
        else:
            shown[name] = value
    return shown


def render_shown(template: Renderer, scope: Mapping[str, Any], hidden: frozenset[str]) -> str:
    """``template`` rendered for an approver: no redacted field's value in it."""
    if not hidden:
        return str(template(scope))
    text = str(template(shown_scope(scope, hidden)))
    answers = {
        f"{name}.{field}": item
        for name, value in scope.items()
        if isinstance(value, Mapping) and isinstance(value.get("content"), Mapping)
        for field, item in value["content"].items()
        if field in hidden
    }
    secrets = secret_values({**scope, **answers}, hidden | answers.keys())
    return scrub(text, secrets)
