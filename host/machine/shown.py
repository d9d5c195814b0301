"""Texts rendered for people other than the caller (approvers): redacted fields read ``[redacted]``.

An approve step's message, and the questions approvers see as the caller saw them, are rendered
from a scope in which every field ``audit.redact`` names (an input, a form field, a URL ask's
secret) reads ``[redacted]``; whatever still carries a redacted value in clear (another name
bound to it, a read that returned it) is scrubbed from the text as the log does.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any, Protocol

from host.logs import REDACTED, scrub, secret_values
from host.spec.templates import Renderer

__all__ = ["Question", "questions_shown", "render_shown", "shown_scope"]


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


class Question(Protocol):
    """An ``ask`` or ``confirm`` step as far as approvers see it."""

    @property
    def name(self) -> str:
        """The step's name (its answer's key)."""
        ...

    @property
    def confirm(self) -> bool:
        """Whether it is a confirm."""
        ...

    @property
    def message(self) -> Renderer:
        """Its message."""
        ...

    @property
    def form(self) -> Any:
        """Its compiled form (``form.schema`` as the client got it, unrendered if dynamic)."""
        ...


def questions_shown(
    steps: Iterable[object], scope: Mapping[str, Any], hidden: frozenset[str]
) -> tuple[dict[str, Any], ...]:
    """The questions the caller answered, as they saw them: each one's rendered message, its
    fields' labels and the answer, for approvers (redacted fields read ``[redacted]``)."""
    shown: list[dict[str, Any]] = []
    for step in steps:
        answer = scope.get(getattr(step, "name", ""))
        if not hasattr(step, "form") or not hasattr(step, "message"):
            continue
        if not isinstance(answer, Mapping):
            continue
        question: Question = step  # type: ignore[assignment]
        content = answer.get("content")
        properties = question.form.schema.get("properties") or {}
        fields = [
            {
                "name": name,
                "label": _label(properties.get(name), name),
                "value": REDACTED if name in hidden else value,
            }
            for name, value in (content.items() if isinstance(content, Mapping) else ())
        ]
        shown.append(
            {
                "name": question.name,
                # NOTE: a URL ask has no confirm (and its values never reach the scope)
                "kind": "confirm" if getattr(question, "confirm", False) else "ask",
                "message": render_shown(question.message, scope, hidden),
                "action": answer.get("action"),
                "fields": fields,
            }
        )
    return tuple(shown)


def _label(schema: Any, name: str) -> str:
    """What the client showed beside a field: its title, else its description, else its name."""
    if isinstance(schema, Mapping):
        for key in ("title", "description"):
            if isinstance(schema.get(key), str) and schema[key]:
                return str(schema[key])
    return name
