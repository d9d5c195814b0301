"""URL asks: what is typed on the host's page is never written where the client can read it.

The values of a ``mode: url`` ask reach the handlers and nothing else, so no template after the
ask may name one of its fields: a message or a result goes to the client (and the model), a
``missing:`` text is a tool error, a remember key or a lock's names are kept in the store and
shown by ``host approvals remembered``. ``when:`` expressions are let through: they choose a branch,
they are never shown.
"""

from __future__ import annotations

from jinja2 import TemplateSyntaxError

from host.spec.diagnostics import Diagnostic
from host.spec.model import Ask
from host.spec.rulebook import error
from host.spec.rules.facts import ToolFacts
from host.spec.rules.templates import template_sites
from host.spec.templates import names

__all__ = ["check_url_asks"]


def check_url_asks(facts: ToolFacts) -> list[Diagnostic]:
    """``url-ask-shown`` for every template after a URL ask that names one of its fields."""
    doc = facts.doc
    asked: dict[str, tuple[int, str]] = {}
    for index, step in enumerate(doc.tool.steps):
        if isinstance(step, Ask) and step.url:
            asked.update((f.name, (index, step.name)) for f in step.fields)
    if not asked:
        return []
    found: list[Diagnostic] = []
    for index, path, source, expression, _ in template_sites(doc):
        if expression:
            continue
        try:
            read = names(source)
        except TemplateSyntaxError:
            continue  # NOTE: template-syntax reports it
        for name in sorted(read & set(asked)):
            at, ask = asked[name]
            if index < at:
                continue
            found.append(
                error(
                    doc.locs.value(path),
                    "url-ask-shown",
                    f"'{name}' is typed on the host's page (the URL ask '{ask}'), and this "
                    "template would write it where the client, the model or the store can read "
                    f"it; remove {{{{ {name} }}}} from it: only the handlers get the value",
                )
            )
    return found
