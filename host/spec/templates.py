"""Sandboxed Jinja templates: one environment, compiled once, undefined names are errors.

Messages, ``missing`` texts, ``when`` expressions, form options and every string inside a RESULT are
templates. The checker uses :func:`names` to prove every name is in scope; the machine uses the
``compile_*`` functions at start-up and only renders per call (a message's code is generated on
its first render).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from functools import lru_cache
from typing import Any

from jinja2 import StrictUndefined, Template, meta, nodes
from jinja2.environment import TemplateExpression
from jinja2.idtracking import VAR_LOAD_RESOLVE, symbols_for_node
from jinja2.sandbox import ImmutableSandboxedEnvironment

from host.spec.memo import memo

__all__ = [
    "ENV",
    "Renderer",
    "compile_expression",
    "compile_result",
    "compile_text",
    "is_template",
    "names",
    "parsed",
    "result_names",
]

# NOTE: immutable sandbox: a template can read what handlers returned but never mutate it, so a
# template cannot smuggle a side effect into a read-only round.
ENV = ImmutableSandboxedEnvironment(
    undefined=StrictUndefined, autoescape=False, keep_trailing_newline=False
)

Renderer = Callable[[Mapping[str, Any]], Any]

_SINGLE_EXPRESSION = re.compile(r"^\s*\{\{(?P<expr>.*)\}\}\s*$", re.DOTALL)


def is_template(text: str) -> bool:
    """True when ``text`` contains Jinja syntax (otherwise it renders to itself)."""
    return "{{" in text or "{%" in text or "{#" in text


def _single_expression(text: str) -> str | None:
    match = _SINGLE_EXPRESSION.match(text)
    if match is None or "}}" in match["expr"] or "{{" in match["expr"]:
        return None
    return match["expr"]


def names(source: str, *, expression: bool = False) -> set[str]:
    """The names a template (or a bare expression, for ``when:``) reads from its scope.

    Raises:
        jinja2.TemplateSyntaxError: with ``lineno`` relative to ``source``.
    """
    return set(_names(source, expression))


# NOTE: the checker and the compiler both ask for every template's names, and generated or
# copied specs repeat the same texts: parsing each distinct text once halves start-up.
@memo(4096)
def _names(source: str, expression: bool) -> frozenset[str]:
    tree = parsed(source, expression=expression)
    if _flat(tree):
        # NOTE: what find_undeclared_variables would find, without generating the template's
        # code (half the time of checking a template): with no frame of its own anywhere in the
        # tree, the names are exactly the top frame's lookups, and no code generation can fail.
        symbols = symbols_for_node(tree)
        return frozenset(
            param
            for action, param in symbols.loads.values()
            if action == VAR_LOAD_RESOLVE and param not in ENV.globals
        )
    return frozenset(meta.find_undeclared_variables(tree))


# Node types that open no scope of their own, and that code generation never refuses (filters and
# tests aside: _flat checks that they exist).
_FLAT_NODES = (
    *(nodes.Template, nodes.Output, nodes.TemplateData, nodes.If, nodes.CondExpr),
    *(nodes.Name, nodes.Const, nodes.Getattr, nodes.Getitem, nodes.Slice, nodes.Call),
    *(nodes.Keyword, nodes.List, nodes.Tuple, nodes.Dict, nodes.Pair, nodes.Concat),
    *(nodes.Filter, nodes.Test, nodes.Compare, nodes.Operand, nodes.And, nodes.Or),
    *(nodes.Not, nodes.Neg, nodes.Pos, nodes.Add, nodes.Sub, nodes.Mul, nodes.Div),
    *(nodes.FloorDiv, nodes.Mod, nodes.Pow),
)


def _flat(tree: nodes.Template) -> bool:
    """True when ``tree`` holds only :data:`_FLAT_NODES`, reads no ``self``, stores no name, and
    uses only filters and tests that exist."""
    for node in tree.find_all(nodes.Node):
        if type(node) not in _FLAT_NODES:
            return False
        if isinstance(node, nodes.Name | nodes.Tuple) and (
            node.ctx != "load" or getattr(node, "name", None) == "self"
        ):
            return False
        if isinstance(node, nodes.Filter) and node.name not in ENV.filters:
            return False
        if isinstance(node, nodes.Test) and node.name not in ENV.tests:
            return False
    return True


@memo(4096)
def parsed(source: str, *, expression: bool = False) -> nodes.Template:
    """The syntax tree of a template (or a bare expression), parsed once; callers only read it.

    Raises:
        jinja2.TemplateSyntaxError: with ``lineno`` relative to ``source``.
    """
    text = "{{ " + source + " }}" if expression else source
    return ENV.parse(text)


def result_names(value: Any) -> set[str]:
    """Every name read by the templates inside a RESULT (a mapping, list or string)."""
    found: set[str] = set()
    if isinstance(value, str):
        found |= names(value)
    elif isinstance(value, Mapping):
        for item in value.values():
            found |= result_names(item)
    elif isinstance(value, list):
        for item in value:
            found |= result_names(item)
    return found


def compile_text(source: str) -> Renderer:
    """A message template that renders to a string.

    NOTE: parsed now (so a template that does not parse fails at start-up, as ever, and the parse
    is usually the checker's, cached), but turned into code on its first render: a worker with
    many tools starts without generating code for messages most of its calls never show.

    Raises:
        jinja2.TemplateSyntaxError: the template does not parse.
    """
    if not is_template(source):
        return _Constant(source).render
    parsed(source)
    return _Text(source).render


class _Text:
    """A message template that generates its code on its first render (:func:`compile_text`).

    NOTE: an object of two slots, not a closure over three cells and an empty dict: a worker
    holds one per message of every tool (3,300 for 1,000 tools).
    """

    __slots__ = ("_made", "_source")

    def __init__(self, source: str) -> None:
        self._source = source
        # NOTE: the template and its globals, set together: two first renders at once both
        # make them, and either pair is whole.
        self._made: tuple[Template, dict[str, Any]] | None = None

    def render(self, scope: Mapping[str, Any]) -> str:
        made = self._made
        if made is None:
            template = _template(self._source)
            made = self._made = (template, dict(template.globals))
        template, names = made
        # NOTE: what Template.render does, less its copy of the globals for every render: the
        # context reads the globals and the scope from one dict either way.
        context = template.new_context({**names, **scope}, shared=True)
        try:
            return ENV.concat(template.root_render_func(context))
        except Exception:
            ENV.handle_exception()  # NOTE: raises, its traceback pointing into the template


@lru_cache(maxsize=4096)
def _template(source: str) -> Template:
    return ENV.from_string(source)


@lru_cache(maxsize=4096)
def _expression(source: str) -> TemplateExpression:
    return ENV.compile_expression(source, undefined_to_none=False)


def compile_expression(source: str) -> Renderer:
    """A bare Jinja expression (``when:``), evaluated to a Python value."""
    return _Evaluate(_expression(source)).render


def compile_result(value: Any) -> Renderer:
    """A RESULT: strings are templates, other values keep their type.

    A string that is exactly one ``{{ expression }}`` keeps the expression's type, so
    ``count: "{{ tickets | length }}"`` is a number, not the text of one.
    """
    if isinstance(value, str):
        single = _single_expression(value)
        if single is not None:
            return _Single(_expression(single)).render
        return compile_text(value)
    if isinstance(value, Mapping):
        return _Mapping({str(k): compile_result(v) for k, v in value.items()}).render
    if isinstance(value, list):
        return _List([compile_result(v) for v in value]).render
    return _Constant(value).render


# NOTE: a renderer is the bound ``render`` of an object of one slot, not a closure (a function
# and a cell): a worker holds several per tool (1,000 tools held 4,000 closures), and a bound
# method is called as fast as a function, where an object's ``__call__`` costs half as much again.


class _Constant:
    """A text without Jinja syntax, or a value that is not text: itself, whatever the scope."""

    __slots__ = ("_value",)

    def __init__(self, value: Any) -> None:
        self._value = value

    def render(self, scope: Mapping[str, Any]) -> Any:
        return self._value


class _Evaluate:
    """A bare expression's value."""

    __slots__ = ("_expression",)

    def __init__(self, expression: TemplateExpression) -> None:
        self._expression = expression

    def render(self, scope: Mapping[str, Any]) -> Any:
        return self._expression(**scope)


class _Single(_Evaluate):
    """A RESULT string that is one expression: its value, of the expression's type."""

    __slots__ = ()

    def render(self, scope: Mapping[str, Any]) -> Any:
        result = self._expression(**scope)
        if isinstance(result, StrictUndefined):
            str(result)  # NOTE: an undefined name would otherwise travel on silently: raises
        return result


class _Mapping:
    """A RESULT mapping: each value rendered."""

    __slots__ = ("_parts",)

    def __init__(self, parts: dict[str, Renderer]) -> None:
        self._parts = parts

    def render(self, scope: Mapping[str, Any]) -> dict[str, Any]:
        return {k: render(scope) for k, render in self._parts.items()}


class _List:
    """A RESULT list: each item rendered."""

    __slots__ = ("_items",)

    def __init__(self, items: list[Renderer]) -> None:
        self._items = items

    def render(self, scope: Mapping[str, Any]) -> list[Any]:
        return [render(scope) for render in self._items]
