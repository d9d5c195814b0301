"""What a template's syntax tree says beyond its names: unknown filters, guarded names, hints.

Jinja parses ``{{ x | lenght }}`` happily and fails only when the template is compiled, and it
renders ``{{ note }}`` until the day ``note`` is missing. These facts let the checker say so at
validate time, from the same parse the compiler uses.
"""

from __future__ import annotations

import re

from jinja2 import TemplateSyntaxError, nodes

from host.spec.memo import memo
from host.spec.rulebook import did_you_mean
from host.spec.templates import ENV, parsed

__all__ = ["guarded_names", "jinja_hint", "unknown_callables"]

_DEFAULT_FILTERS = frozenset({"default", "d"})
_DEFINED_TESTS = frozenset({"defined", "undefined"})


@memo(4096)
def unknown_callables(source: str, *, expression: bool = False) -> tuple[str, ...]:
    """One message per filter or test the template uses that Jinja does not have.

    Raises:
        jinja2.TemplateSyntaxError: the template does not parse.
    """
    if "|" not in source and " is " not in source:
        return ()
    found: list[str] = []
    tree = parsed(source, expression=expression)
    for node in tree.find_all((nodes.Filter, nodes.Test)):
        name = node.name
        known, kind = (
            (ENV.filters, "filter") if isinstance(node, nodes.Filter) else (ENV.tests, "test")
        )
        if name not in known:
            hint = did_you_mean(name, known) or f" See Jinja's list of built-in {kind}s."
            found.append(f"there is no {kind} named '{name}'.{hint}")
    return tuple(dict.fromkeys(found))


@memo(4096)
def guarded_names(source: str, *, expression: bool = False) -> frozenset[str]:
    """Names the template checks before trusting: ``x is defined`` or ``x | default(...)``.

    NOTE: a name checked anywhere in a template counts as guarded everywhere in it. That misses
    a rare mistake (a check in one branch, an unguarded use in another) but never refuses the
    usual ``{% if note is defined %}...{{ note }}...{% endif %}``.

    Raises:
        jinja2.TemplateSyntaxError: the template does not parse.
    """
    if "defined" not in source and "default" not in source and "|" not in source:
        return frozenset()
    tree = parsed(source, expression=expression)
    names: set[str] = set()
    for node in tree.find_all((nodes.Filter, nodes.Test)):
        checks = (
            node.name in _DEFAULT_FILTERS
            if isinstance(node, nodes.Filter)
            else node.name in _DEFINED_TESTS
        )
        if checks and isinstance(node.node, nodes.Name):
            names.add(node.node.name)
    return frozenset(names)


def jinja_hint(exc: TemplateSyntaxError, *, expression: bool) -> str:
    """How to fix a Jinja syntax error, for the usual ones; ``""`` otherwise."""
    message = exc.message or ""
    missing = re.match(r"No (filter|test) named '(\w+)'", message)
    if missing:
        kind, name = missing[1], missing[2]
        known = ENV.filters if kind == "filter" else ENV.tests
        return did_you_mean(name, known) or f" See Jinja's list of built-in {kind}s."
    if "got '='" in message:
        return "; to compare two values, write == (a single = assigns)"
    if "unexpected '}'" in message:
        return "; close each {{ with }} and each {% with %}"
    block = re.search(r"innermost block that needs to be closed is '(\w+)'", message)
    if block:
        return f"; add {{% end{block[1]} %}} where the {block[1]} block ends"
    if "expected token 'name'" in message:
        return "; a name is missing there (after '|' comes a filter name, like | length)"
    if "expected token 'end of print statement'" in message:
        joined = "join the two parts with an operator" if expression else "close it with }}"
        return f"; {joined}, or use a '.' between a name and its attribute"
    return "; fix the Jinja at the caret"
