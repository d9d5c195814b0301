"""Plain texts that look like templates: ``{{ ... }}`` where nothing renders it.

Only ``message``, ``missing``, form options given as a string and the strings of a RESULT are
templates. A ``label``, a title or a description holding ``{{ id }}`` is sent as written, so the
user reads the braces; the author almost always meant it to be rendered.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from host.spec.diagnostics import Diagnostic
from host.spec.rulebook import error
from host.spec.rules.facts import ToolFacts
from host.spec.templates import is_template
from host.spec.yaml import Document, YPath

__all__ = ["check_server_text", "check_tool_text"]

_TEMPLATES = "message:, missing:, form options written as text, and results"


def check_tool_text(facts: ToolFacts) -> list[Diagnostic]:
    """``template-unrendered`` for the plain texts of a tool."""
    doc = facts.doc
    return [
        _unrendered(doc.locs.value(path), path, text)
        for path, text in _tool_texts(doc.data)
        if is_template(text)
    ]


def check_server_text(doc: Document) -> list[Diagnostic]:
    """``template-unrendered`` for the server document's texts."""
    data = doc.data if isinstance(doc.data, dict) else {}
    return [
        _unrendered(doc.locs.value((key,)), (key,), data[key])
        for key in ("name", "version", "instructions")
        if isinstance(data.get(key), str) and is_template(data[key])
    ]


def _unrendered(pos: Any, path: YPath, text: str) -> Diagnostic:
    key = str(path[-1]) if not isinstance(path[-1], int) else str(path[-2])
    if key == "label":
        fix = "write plain text here and put what changes into the confirm's message:"
    else:
        fix = "write plain text here"
    return error(
        pos,
        "template-unrendered",
        f"'{key}' is not a template, so '{text.strip()}' would be sent with its braces as "
        f"written; {fix} (the templates are {_TEMPLATES})",
    )


def _tool_texts(data: dict[str, Any]) -> Iterator[tuple[YPath, str]]:
    for key in ("title", "description"):
        if isinstance(data.get(key), str):
            yield (key,), data[key]
    annotations = data.get("annotations")
    if isinstance(annotations, dict) and isinstance(annotations.get("title"), str):
        yield ("annotations", "title"), annotations["title"]
    for key in ("input", "output"):
        yield from _schema_texts(data.get(key), (key,))
    for index, step in enumerate(data.get("steps") or []):
        if not isinstance(step, dict):
            continue
        base: YPath = ("steps", index)
        if isinstance(step.get("label"), str):
            yield (*base, "label"), step["label"]
        form = step.get("form")
        if isinstance(form, dict):
            for name, field in form.items():
                yield from _field_texts(field, (*base, "form", name))


def _field_texts(field: Any, path: YPath) -> Iterator[tuple[YPath, str]]:
    if not isinstance(field, dict):
        return
    for key in ("title", "description"):
        if isinstance(field.get(key), str):
            yield (*path, key), field[key]
    names = field.get("enumNames")
    if isinstance(names, list):
        for i, name in enumerate(names):
            if isinstance(name, str):
                yield (*path, "enumNames", i), name
    written = field.get("items")
    items: dict[str, Any] = written if isinstance(written, dict) else {}
    choices = [*(field.get("oneOf") or []), *(items.get("anyOf") or [])]
    base = (*path, "oneOf") if field.get("oneOf") else (*path, "items", "anyOf")
    for i, choice in enumerate(choices):
        if isinstance(choice, dict) and isinstance(choice.get("title"), str):
            yield (*base, i, "title"), choice["title"]


def _schema_texts(schema: Any, path: YPath) -> Iterator[tuple[YPath, str]]:
    """Titles and descriptions of an input or output schema and its properties."""
    if not isinstance(schema, dict):
        return
    for key in ("title", "description"):
        if isinstance(schema.get(key), str):
            yield (*path, key), schema[key]
    properties = schema.get("properties")
    if isinstance(properties, dict):
        for name, sub in properties.items():
            yield from _schema_texts(sub, (*path, "properties", name))
