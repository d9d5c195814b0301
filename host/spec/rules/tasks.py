"""``task:``: a tool runs as an MCP task only where a step can wait on someone else.

A call becomes a task when it reaches an ``approve`` that needs a decision or an ``ask`` with
``mode: url``; a tool with neither never waits on anyone but the model, so ``task: optional`` or
``task: required`` on it promises what no call can keep (``required`` would refuse every client
without the tasks extension for nothing).
"""

from __future__ import annotations

from host.spec.diagnostics import Diagnostic
from host.spec.model import needs_sign_in
from host.spec.rulebook import error
from host.spec.rules.facts import ToolFacts

__all__ = ["check_task"]


def check_task(facts: ToolFacts) -> list[Diagnostic]:
    """``task``: ``optional`` or ``required`` on a tool with no step that waits on someone."""
    doc = facts.doc
    written = doc.tool.task
    if written not in ("optional", "required") or any(needs_sign_in(s) for s in doc.tool.steps):
        return []
    return [
        error(
            doc.locs.value(("task",)),
            "task",
            f"task: {written} on the tool {doc.tool.name}, and none of its steps waits on "
            "someone else (an approve, or an ask with mode: url), so no call of it ever "
            "becomes a task; remove task: or write task: never",
        )
    ]
