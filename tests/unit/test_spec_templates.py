"""Message templates: parsed at start-up (errors there, as ever), code generated on first render."""

from __future__ import annotations

import uuid

import pytest
from jinja2 import TemplateSyntaxError, UndefinedError

from host.spec import templates
from host.spec.templates import ENV, compile_text


def test_a_template_that_does_not_parse_fails_when_compiled_with_jinjas_error() -> None:
    source = f"Close {{{{ id }}}} {uuid.uuid4().hex} {{% if %}}"
    with pytest.raises(TemplateSyntaxError) as ours:
        compile_text(source)
    with pytest.raises(TemplateSyntaxError) as jinjas:
        ENV.from_string(source)
    assert (ours.value.message, ours.value.lineno) == (jinjas.value.message, jinjas.value.lineno)


def test_code_is_generated_on_the_first_render_only() -> None:
    source = f"Close {{{{ id }}}}{{% if urgent %}} now{{% endif %}} ({uuid.uuid4().hex})"
    before = templates._template.cache_info()
    render = compile_text(source)
    assert templates._template.cache_info().currsize == before.currsize
    assert render({"id": "T-1", "urgent": True}).startswith("Close T-1 now (")
    after_first = templates._template.cache_info()
    assert after_first.misses == before.misses + 1
    assert render({"id": "T-2", "urgent": False}).startswith("Close T-2 (")
    assert templates._template.cache_info().misses == after_first.misses


def test_an_undefined_name_still_fails_the_render() -> None:
    render = compile_text(f"Hello {{{{ nobody }}}} {uuid.uuid4().hex}")
    with pytest.raises(UndefinedError):
        render({})


def test_plain_text_renders_to_itself() -> None:
    assert compile_text("no braces here")({}) == "no braces here"
