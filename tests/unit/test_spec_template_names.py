"""The names a template reads: the same answer (or the same error) as Jinja's own analysis.

``templates.names`` skips Jinja's code generation for templates that open no scope of their own;
these tests hold it to ``jinja2.meta.find_undeclared_variables`` on every template of the specs
and fixtures and on seeded random templates built to hit the edges: loops, ``set``, ``self``,
globals, unknown filters and tests (inside and outside an ``if``), attributes and calls.
"""

from __future__ import annotations

import re

import pytest
from hypothesis import HealthCheck, given, seed, settings
from hypothesis import strategies as st
from jinja2 import TemplateSyntaxError, meta

from host.spec.templates import ENV, names
from support.paths import ROOT


def _jinja(source: str, expression: bool) -> set[str] | str:
    text = "{{ " + source + " }}" if expression else source
    try:
        return set(meta.find_undeclared_variables(ENV.parse(text)))
    except TemplateSyntaxError as exc:
        return f"{type(exc).__name__}: {exc.message} (line {exc.lineno})"


def _ours(source: str, expression: bool) -> set[str] | str:
    try:
        return names(source, expression=expression)
    except TemplateSyntaxError as exc:
        return f"{type(exc).__name__}: {exc.message} (line {exc.lineno})"


def _written() -> list[str]:
    found: set[str] = set()
    for path in [*ROOT.glob("specs/*.yaml"), *ROOT.glob("tests/fixtures/**/*.yaml")]:
        text = path.read_text(encoding="utf-8", errors="replace")
        found.update(re.findall(r"[^\n]*(?:\{\{|\{%)[^\n]*", text))
    return sorted(found)


@pytest.mark.parametrize("line", _written())
def test_every_template_line_of_the_specs_and_fixtures(line: str) -> None:
    assert _ours(line, False) == _jinja(line, False)


CASES = [
    "{{ id }}",
    "{{ self }}",
    "{{ range(3) | list }}",
    "{% if a %}{{ b }}{% else %}{{ c.d }}{% endif %}",
    "{% if a is defined %}{{ a }}{% endif %}",
    "{{ a | lenght }}",
    "{% if a %}{{ a | lenght }}{% endif %}",
    "{{ a is od }}",
    "{% if a is od %}x{% endif %}",
    "{% for x in xs %}{{ x }}{{ y }}{{ loop.index }}{% endfor %}",
    "{% set y = 1 %}{{ y }}{{ z }}",
    "{% with q = 1 %}{{ q }}{{ r }}{% endwith %}",
    "{% filter upper %}{{ s }}{% endfilter %}",
    "{{ a[b] ~ c[1:2] }}{{ {'k': d} }}{{ (e, f) }}{{ -g + h * 2 }}",
    "{{ i if j else k }}{{ l and not m or n }}{{ o.p(q=r) }}",
    "{{ dict(a=1) }}{{ namespace }}{{ lipsum }}",
    "{% block b %}{{ t }}{% endblock %}",
    "{% macro m(u) %}{{ u }}{{ v }}{% endmacro %}{{ m(w) }}",
]


@pytest.mark.parametrize("source", CASES)
def test_edges(source: str) -> None:
    assert _ours(source, False) == _jinja(source, False)


NAME = st.sampled_from(["a", "b", "x", "self", "loop", "range", "dict", "caller", "super"])
FILTER = st.sampled_from(["length", "lenght", "default('')", "upper", "list", "nosuch"])
TEST = st.sampled_from(["defined", "undefined", "odd", "od", "none"])
ATOM = st.one_of(
    NAME,
    st.builds("{}.{}".format, NAME, NAME),
    st.builds("{}[{}]".format, NAME, NAME),
    st.builds("{}({})".format, NAME, NAME),
    st.sampled_from(["1", "'s'", "[1, 2]", "{'k': 1}"]),
)
EXPR = st.one_of(
    ATOM,
    st.builds("{} | {}".format, ATOM, FILTER),
    st.builds("{} is {}".format, ATOM, TEST),
    st.builds("{} == {}".format, ATOM, ATOM),
    st.builds("{} if {} else {}".format, ATOM, ATOM, ATOM),
    st.builds("not {} and {}".format, ATOM, ATOM),
)
BODY = st.recursive(
    st.one_of(st.just("text "), st.builds("{{{{ {} }}}}".format, EXPR)),
    lambda inner: st.one_of(
        st.builds("{}{}".format, inner, inner),
        st.builds("{{% if {} %}}{}{{% endif %}}".format, EXPR, inner),
        st.builds("{{% if {} %}}{}{{% else %}}{}{{% endif %}}".format, EXPR, inner, inner),
        st.builds("{{% for x in {} %}}{}{{% endfor %}}".format, EXPR, inner),
        st.builds("{{% set b = {} %}}{}".format, EXPR, inner),
    ),
    max_leaves=6,
)


@seed(20261216)
@settings(max_examples=500, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(source=BODY)
def test_random_templates_read_the_names_jinja_says(source: str) -> None:
    assert _ours(source, False) == _jinja(source, False)


@seed(20261217)
@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(source=EXPR)
def test_random_expressions_read_the_names_jinja_says(source: str) -> None:
    assert _ours(source, True) == _jinja(source, True)
