"""Redacted fields in texts approvers read: ``redacted-shown``.

A field ``audit.redact`` names is kept out of every record, and every text an approver reads shows
it as ``[redacted]``: the approve step's message, and (on the request's page) the confirm and ask
messages the caller answered. A message of a tool with an approve step that names one is a
message approvers read with a hole in it, so the author is told at the template which field and
what approvers will read. (A tool without an approve step shows its messages to the caller
alone; a confirm's ``label`` is never rendered: ``template-unrendered`` covers a name in it.)
"""

from __future__ import annotations

from jinja2 import TemplateSyntaxError

from host.spec.diagnostics import Diagnostic
from host.spec.model import Approve, Ask, Confirm
from host.spec.rulebook import warning
from host.spec.rules.facts import ToolFacts
from host.spec.templates import names

__all__ = ["check_redacted_shown"]


def check_redacted_shown(facts: ToolFacts) -> list[Diagnostic]:
    """``redacted-shown`` for each human-read template that names a redacted field."""
    doc = facts.doc
    hidden = set(doc.tool.audit_redact)
    if not hidden or not any(isinstance(step, Approve) for step in doc.tool.steps):
        return []
    found: list[Diagnostic] = []
    for index, step in enumerate(doc.tool.steps):
        if not isinstance(step, Approve | Ask | Confirm):
            continue
        try:
            read = names(step.message)
        except TemplateSyntaxError:
            continue  # NOTE: template-syntax reports it
        told = "" if isinstance(step, Approve) else " (the caller reads it in clear)"
        for name in sorted(read & hidden):
            found.append(
                warning(
                    doc.locs.value(("steps", index, "message")),
                    "redacted-shown",
                    f"'{name}' is in audit.redact, and approvers read this message: they read "
                    f"[redacted] in its place{told}; remove {{{{ {name} }}}} from it, or take "
                    f"'{name}' out of audit.redact",
                )
            )
    return found
