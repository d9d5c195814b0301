"""Warnings: things that work but are probably not what the author wants."""

from __future__ import annotations

from jinja2 import TemplateSyntaxError

from host.spec.build import ToolDoc
from host.spec.diagnostics import Diagnostic
from host.spec.model import Ask, Confirm
from host.spec.rulebook import warning
from host.spec.rules.facts import ToolFacts
from host.spec.rules.templates import template_sites, used_names

__all__ = ["check_advice"]


def check_advice(facts: ToolFacts) -> list[Diagnostic]:
    """``no-confirm`` and ``merge-questions``."""
    doc = facts.doc
    return [*_no_confirm(doc), *_merge_questions(doc)]


def _no_confirm(doc: ToolDoc) -> list[Diagnostic]:
    tool = doc.tool
    hints = tool.annotations
    # NOTE: MCP's defaults: destructiveHint true, readOnlyHint false, when absent.
    destructive = (
        hints.get("destructiveHint", True) is True and hints.get("readOnlyHint") is not True
    )
    act = tool.act
    if not destructive or act is None or any(isinstance(s, Confirm) for s in tool.steps):
        return []
    return [
        warning(
            act.pos,
            "no-confirm",
            f"'{tool.name}' may destroy things (destructiveHint is true or absent) but acts "
            "without asking: add a confirm step before the act, or set annotations: "
            "{destructiveHint: false} (or readOnlyHint: true) if it does not",
        )
    ]


def _merge_questions(doc: ToolDoc) -> list[Diagnostic]:
    steps = doc.tool.steps
    used: dict[int, set[str]] = {}
    for index, _path, source, expression, own in template_sites(doc):
        try:
            read = used_names(source, expression=expression, result=own)
            used.setdefault(index, set()).update(read)
        except TemplateSyntaxError:
            used.setdefault(index, set()).add("\0unparsable")
    found: list[Diagnostic] = []
    for index in range(1, len(steps)):
        first, second = steps[index - 1], steps[index]
        # NOTE: only ask+ask: a confirm's "unticked" cannot be expressed inside an ask's form.
        if not (isinstance(first, Ask) and isinstance(second, Ask)) or first.when != second.when:
            continue
        answers = {first.name, *(f.name for f in first.fields)}
        if used.get(index, set()) & (answers | {"\0unparsable"}):
            continue
        found.append(
            warning(
                second.pos,
                "merge-questions",
                f"the asks '{first.name}' and '{second.name}' come one after the other and "
                f"'{second.name}' does not use the answers to '{first.name}': they could be one "
                "form; merge their fields into one ask",
            )
        )
    return found
