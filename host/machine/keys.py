"""Keys that cannot collide: ``remember.key`` (a template or a list of names) and ``lock:``.

A key is made of several values (a service and an environment), and two calls whose values
differ must never share a key: ``a/b`` + ``c`` is not ``a`` + ``b/c``. The key still reads as
written in the common case (``api/staging`` for ``{{ service }}/{{ environment }}`` or for
``[service, environment]``), because only the characters that separate the values are escaped
inside each value (``%`` and the separators, as ``%XX`` of their UTF-8 bytes): a value can then
never contain a separator, so the values can be told apart again from the key alone.

A template whose values could run together (two expressions with nothing, or only ``%`` and
hexadecimal digits, between them) gets its values as a JSON list instead. A template with
``{% %}`` or ``{# #}`` blocks is used as it renders: its author chose how values are joined.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from host.spec.templates import Renderer, compile_text

__all__ = ["KeyFunction", "lock_key", "names_key", "template_key"]

KeyFunction = Callable[[Mapping[str, Any]], str]
"""Renders a confirm's approval key (or an act's lock name) from the names in scope."""

_EXPRESSION = re.compile(r"(\{\{.*?\}\})", re.DOTALL)
# NOTE: what an escaped value may contain besides its own characters: a separator made only of
# these could be read as part of a value.
_ESCAPE_MARKS = frozenset("%0123456789ABCDEF")
_NAMES_SEPARATOR = "/"


def names_key(names: Sequence[str]) -> KeyFunction:
    """The key of ``remember: {key: [a, b]}``: the values of those names, joined by ``/``."""
    separators = frozenset(_NAMES_SEPARATOR)

    def key(scope: Mapping[str, Any]) -> str:
        return _NAMES_SEPARATOR.join(_escaped(_text(scope[n]), separators) for n in names)

    return key


def lock_key(names: Sequence[str]) -> KeyFunction:
    """The name of ``lock: [a, b]``: ``a=<value>/b=<value>``, the names in sorted order.

    The names are part of it, so ``lock: [service]`` and ``lock: [environment]`` never share a
    lock for the same value, and the order they are written in does not matter: every tool that
    locks the same names on the same values excludes the others.
    """
    ordered = sorted(names)
    separators = frozenset(_NAMES_SEPARATOR + "=")

    def key(scope: Mapping[str, Any]) -> str:
        return _NAMES_SEPARATOR.join(
            f"{n}={_escaped(_text(scope[n]), separators)}" for n in ordered
        )

    return key


def template_key(source: str) -> KeyFunction:
    """The key of ``remember: {key: "..."}``: the template, each value escaped (see above)."""
    if "{%" in source or "{#" in source:
        whole = compile_text(source)
        return lambda scope: str(whole(scope))
    parts = _EXPRESSION.split(source)
    literals, expressions = parts[0::2], [compile_text(p) for p in parts[1::2]]
    between = literals[1:-1]
    if any(not set(text) - _ESCAPE_MARKS for text in between):
        return _listed(expressions)
    separators = frozenset("".join(between)) - _ESCAPE_MARKS

    def key(scope: Mapping[str, Any]) -> str:
        values = [_escaped(str(render(scope)), separators) for render in expressions]
        pieces = [literals[0]]
        for value, literal in zip(values, literals[1:], strict=True):
            pieces += [value, literal]
        return "".join(pieces)

    return key


def _listed(expressions: Sequence[Renderer]) -> KeyFunction:
    """Values that nothing separates: a JSON list of them, which keeps them apart."""

    def key(scope: Mapping[str, Any]) -> str:
        return json.dumps([str(render(scope)) for render in expressions], ensure_ascii=False)

    return key


def _text(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value, sort_keys=True, default=str)


def _escaped(value: str, separators: frozenset[str]) -> str:
    """``value`` with ``%`` and every separator written as ``%XX`` (its UTF-8 bytes)."""
    if "%" not in value and separators.isdisjoint(value):
        return value
    return "".join(
        "".join(f"%{b:02X}" for b in ch.encode("utf-8")) if ch == "%" or ch in separators else ch
        for ch in value
    )
