"""Examples: ``answers`` and ``expect.asks`` name the tool's questions, ``approvals`` and
``expect.pending`` its approve steps; example names are unique."""

from __future__ import annotations

from host.spec.diagnostics import Diagnostic
from host.spec.model import Approve, Ask, Confirm, Example
from host.spec.rulebook import did_you_mean, error, one_of
from host.spec.rules.facts import ToolFacts
from host.spec.yaml.positions import Locs

__all__ = ["check_examples"]


def check_examples(facts: ToolFacts) -> list[Diagnostic]:
    """``example`` diagnostics for every entry of the tool's ``examples:``."""
    doc = facts.doc
    tool, locs = doc.tool, doc.locs
    questions = [s.name for s in tool.steps if isinstance(s, Ask | Confirm)]
    approves = [s.name for s in tool.steps if isinstance(s, Approve)]
    listed = one_of(questions) if questions else "none (the tool asks nothing)"
    found: list[Diagnostic] = []
    seen: dict[str, int] = {}
    for i, example in enumerate(tool.examples):
        if example.name in seen:
            found.append(
                error(
                    locs.value(("examples", i, "name")),
                    "example",
                    f"another example is already called '{example.name}' "
                    f"(line {seen[example.name]}); rename one of them",
                )
            )
        seen.setdefault(example.name, example.pos.line)
        for name in example.answers:
            if name not in questions:
                found.append(
                    error(
                        locs.key(("examples", i, "answers", name)),
                        "example",
                        f"example '{example.name}' answers '{name}', which is not a question of "
                        f"'{tool.name}'; its questions: {listed}."
                        f"{did_you_mean(name, questions) or ' Use one of them.'}",
                    )
                )
        asks = example.expect.get("asks") or []
        for j, name in enumerate(asks):
            if name not in questions:
                found.append(
                    error(
                        locs.value(("examples", i, "expect", "asks", j)),
                        "example",
                        f"example '{example.name}' expects the question '{name}', which "
                        f"'{tool.name}' does not have; its questions: {listed}."
                        f"{did_you_mean(name, questions) or ' Use one of them.'}",
                    )
                )
        found += _approve_names(tool.name, approves, example, i, locs)
    return found


def _approve_names(
    tool: str, approves: list[str], example: Example, i: int, locs: Locs
) -> list[Diagnostic]:
    """``approvals`` and ``expect.pending`` name approve steps of the tool."""
    listed = one_of(approves) if approves else "none (the tool has no approve step)"
    named = [(locs.key(("examples", i, "approvals", n)), n, "decides") for n in example.approvals]
    pending = example.expect.get("pending")
    if isinstance(pending, str):
        named.append((locs.value(("examples", i, "expect", "pending")), pending, "leaves pending"))
    return [
        error(
            where,
            "example",
            f"example '{example.name}' {verb} '{name}', which is not an approve step of "
            f"'{tool}'; its approve steps: {listed}."
            f"{did_you_mean(name, approves) or ' Use one of them.'}",
        )
        for where, name, verb in named
        if name not in approves
    ]
