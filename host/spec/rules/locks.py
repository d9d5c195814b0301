"""An act's ``lock:``: ``lock_wait`` and ``busy`` only with a lock.

The schema pass checks the shape (a list of names, a duration, a RESULT), the duration rule the
range of ``lock_wait``, and the template rules that the lock's names and ``busy``'s templates use
names in scope at the act.

NOTE: there is deliberately no sibling of ``remember-key`` here. A lock names the resource an act
changes (``[service, environment]``), not the call: leaving out ``force`` or ``reason`` is exactly
right, since two restarts of one service must exclude each other whatever their options.
"""

from __future__ import annotations

from host.spec.diagnostics import Diagnostic
from host.spec.model import Act
from host.spec.rulebook import error
from host.spec.rules.facts import ToolFacts

__all__ = ["check_locks"]


def check_locks(facts: ToolFacts) -> list[Diagnostic]:
    """``lock``: ``lock_wait`` or ``busy`` on an act that has no ``lock``."""
    doc = facts.doc
    found: list[Diagnostic] = []
    for index, step in enumerate(doc.tool.steps):
        raw = doc.data["steps"][index]
        if not isinstance(step, Act) or "lock" in raw:
            continue
        for key in ("lock_wait", "busy"):
            if key in raw:
                found.append(
                    error(
                        doc.locs.key(("steps", index, key)),
                        "lock",
                        f"{key}: needs a lock: on the act {step.call}, and it has none, so there "
                        "is nothing to wait for; add lock: [names] (the names whose values say "
                        f"which resource it changes, like lock: [service, environment]), or "
                        f"remove {key}:",
                    )
                )
    return found
