"""Templates: valid Jinja, and only names in scope at their step.

Checked: ``missing``, ``message``, ``when`` (a bare expression), every string inside a RESULT
(``declined``/``cancelled``/``unticked``, which may also use the question's own name, as in
``{{ pick.action }}``) and template-valued ``enum`` options.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from functools import lru_cache
from typing import Any

from jinja2 import TemplateSyntaxError

from host.spec.build import ToolDoc
from host.spec.diagnostics import Diagnostic
from host.spec.load import YPath
from host.spec.model import Ask, Confirm, Read
from host.spec.rules import did_you_mean, error, one_of
from host.spec.scope import Name, Scopes
from host.spec.templates import ENV, is_template, names, result_names

__all__ = ["check_templates", "template_sites", "used_names"]

_GLOBALS = frozenset(ENV.globals)
_SIMPLE = re.compile(r"\{\{-?\s*([A-Za-z_]\w*)(?:\.[A-Za-z_]\w*)*\s*-?\}\}")
_CONSTANTS = frozenset({"true", "false", "none", "True", "False", "None"})


def template_sites(doc: ToolDoc) -> Iterator[tuple[int, YPath, str, bool, bool]]:
    """Every template of a tool: (step index, path, source, is an expression, may use own name)."""
    data = doc.data
    for index, step in enumerate(doc.tool.steps):
        raw = data["steps"][index]
        base: YPath = ("steps", index)
        if isinstance(step, Read) and step.missing is not None:
            yield index, (*base, "missing"), step.missing, False, False
        if not isinstance(step, Ask | Confirm):
            continue
        yield index, (*base, "message"), step.message, False, False
        if step.when is not None:
            yield index, (*base, "when"), step.when, True, False
        for key in ("declined", "cancelled", "unticked"):
            if key in raw:
                for path, text in _strings(raw[key], (*base, key)):
                    yield index, path, text, False, True
        for name, field in (raw.get("form") or {}).items():
            if isinstance(field.get("enum"), str):
                yield index, (*base, "form", name, "enum"), field["enum"], False, False
            items = field.get("items")
            if isinstance(items, dict) and isinstance(items.get("enum"), str):
                yield index, (*base, "form", name, "items", "enum"), items["enum"], False, False


def _strings(value: Any, path: YPath) -> Iterator[tuple[YPath, str]]:
    if isinstance(value, str):
        yield path, value
    elif isinstance(value, dict):
        for key, item in value.items():
            yield from _strings(item, (*path, key))
    elif isinstance(value, list):
        for i, item in enumerate(value):
            yield from _strings(item, (*path, i))


@lru_cache(maxsize=8192)
def used_names(source: str, *, expression: bool = False, result: bool = False) -> frozenset[str]:
    """The names a template reads (cached: the same texts recur across tools).

    Raises:
        jinja2.TemplateSyntaxError: the template does not parse.
    """
    if not expression and not is_template(source):
        return frozenset()
    if not expression and "{%" not in source and "{#" not in source:
        # NOTE: a fast path for the common `{{ name }}` / `{{ name.attr }}` templates; anything
        # else (filters, tests, keywords, stray braces) goes through Jinja's parser.
        simple = _SIMPLE.findall(source)
        if simple and len(simple) == source.count("{{") and not set(simple) & _CONSTANTS:
            return frozenset(simple)
    if result:
        return frozenset(result_names(source))
    return frozenset(names(source, expression=expression))


def check_templates(doc: ToolDoc, scopes: Scopes) -> list[Diagnostic]:
    """``template-syntax`` and ``template-name`` for every template of the tool."""
    found: list[Diagnostic] = []
    locs = doc.locs
    for index, path, source, expression, own in template_sites(doc):
        if expression and ("{{" in source or "{%" in source):
            found.append(
                error(
                    locs.value(path),
                    "template-syntax",
                    "when: is a bare Jinja expression: write `agent is undefined`, not "
                    "`{{ agent is undefined }}`",
                )
            )
            continue
        try:
            used = used_names(source, expression=expression, result=own)
        except TemplateSyntaxError as exc:
            found.append(
                error(
                    locs.line(path, exc.lineno), "template-syntax", f"invalid Jinja: {exc.message}"
                )
            )
            continue
        scope = dict(scopes.at(index))
        step = doc.tool.steps[index]
        if own and isinstance(step, Ask | Confirm):
            scope[step.name] = scopes.at(index + 1)[step.name]
        for name in sorted(used - set(scope) - _GLOBALS):
            found.append(
                error(locs.word(path, name), "template-name", unknown(name, scope, scopes))
            )
    return found


def unknown(name: str, scope: dict[str, Name], scopes: Scopes) -> str:
    """The message for a name not in scope: defined only later, or not at all (with a hint)."""
    later = scopes.later(name)
    if later is not None and later.step is not None:
        return (
            f"'{name}' is not defined yet here: it comes from the step at line {later.pos.line}, "
            "which runs later."
        )
    listed = one_of(scope) if scope else "none"
    return f"'{name}' is not defined here; names in scope: {listed}.{did_you_mean(name, scope)}"
