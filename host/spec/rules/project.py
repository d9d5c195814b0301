"""The whole project: tool names unique, one server, elicitation on where tools ask, scopes held.

These rules need every document of the project, so :mod:`host.spec.check` applies them after the
last file, to what it kept of each document (a :class:`CheckedTool`, the server documents).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from host.spec.diagnostics import Diagnostic
from host.spec.model import (
    FALLBACK_TOOL,
    Approve,
    Ask,
    Confirm,
    Pos,
    Server,
    Tool,
    needs_sign_in,
)
from host.spec.rulebook import error, warning
from host.spec.yaml import Document, Locs

__all__ = [
    "CheckedTool",
    "duplicate_servers",
    "duplicate_tool",
    "elicitation",
    "no_tools",
    "scopes_at",
    "unprotected",
]


@dataclass(frozen=True)
class CheckedTool:
    """A checked tool, and where its ``scopes:`` are written (None when it has none)."""

    tool: Tool
    scopes_at: Pos | None


def scopes_at(locs: Locs, data: Any) -> Pos | None:
    """Where ``scopes:`` is written in a document, or None when it names none."""
    return locs.key(("scopes",)) if isinstance(data, dict) and data.get("scopes") else None


def duplicate_tool(doc: Document, names: dict[str, Pos]) -> list[Diagnostic]:
    """``tool-name`` (the fallback tool's own name) and ``duplicate-tool`` (a name seen before)."""
    name = doc.data.get("name")
    if not isinstance(name, str):
        return []
    pos = doc.locs.value(("name",))
    if name == FALLBACK_TOOL:
        return [
            error(
                pos,
                "tool-name",
                f"'{name}' is the host's own fallback tool for clients that cannot show forms; "
                "give this tool another name",
            )
        ]
    first = names.setdefault(name, pos)
    if first == pos:
        return []
    return [
        error(
            pos, "duplicate-tool", f"another tool is already called '{name}' ({first}); rename one"
        ),
        error(first, "duplicate-tool", f"another tool is also called '{name}' ({pos}); rename one"),
    ]


def duplicate_servers(servers: list[tuple[Document, Server | None]]) -> list[Diagnostic]:
    """``duplicate-server`` for every ``kind: server`` document after the first."""
    return [
        error(
            doc.locs.value(()),
            "duplicate-server",
            f"a second kind: server document (the first is {servers[0][0].locs.value(())}); "
            "keep one",
        )
        for doc, _ in servers[1:]
    ]


def no_tools(first: Path) -> Diagnostic:
    """``no-tools``: the specs at ``first`` hold no tool at all."""
    return warning(
        Pos(str(first), 0, 0),
        "no-tools",
        f"no kind: tool document in {first}: add a tool, or point at the right directory",
    )


def unprotected(tools: list[CheckedTool], servers: list[tuple[Document, Any]]) -> list[Diagnostic]:
    """``scopes-unprotected`` and ``approve-unprotected``: what needs a signed-in caller or
    approver, in specs served where nobody can sign in."""
    return _unprotected_scopes(tools, servers) + _unprotected_sign_ins(tools)


def _unprotected_scopes(
    tools: list[CheckedTool], servers: list[tuple[Document, Any]]
) -> list[Diagnostic]:
    """One warning for every ``scopes:`` written where no caller can hold a scope.

    NOTE: one cause (no auth settings where the host runs) and one fix: a warning per tool
    buried the specs' other problems, so the first place is reported and the rest are named.
    """
    places = [scopes_at(doc.locs, doc.data) for doc, _ in servers] + [t.scopes_at for t in tools]
    written = sorted(p for p in places if p is not None)
    if not written:
        return []
    others = ""
    if len(written) > 1:
        shown = ", ".join(str(p) for p in written[1:4])
        more = f" and {len(written) - 4} more" if len(written) > 4 else ""
        others = f" (here and at {shown}{more})"
    return [
        warning(
            written[0],
            "scopes-unprotected",
            f"scopes{others} protect nothing without auth settings: set HOST_AUTH_ISSUER and "
            "HOST_AUTH_AUDIENCE, or HOST_AUTH_TOKENS, where the host runs; host serve refuses "
            "to start without them",
        )
    ]


def _unprotected_sign_ins(tools: list[CheckedTool]) -> list[Diagnostic]:
    """Every step that needs someone to sign in to a page, where nobody could."""
    found = []
    for tool in tools:
        for step in tool.tool.steps:
            if not needs_sign_in(step) or not isinstance(step, Approve | Ask):
                continue
            rule, who = (
                ("approve-unprotected", f"the approve step '{step.name}' needs approvers who")
                if isinstance(step, Approve)
                else ("url-ask-unprotected", f"the URL ask '{step.name}' needs its caller to")
            )
            found.append(
                warning(
                    step.pos,
                    rule,
                    f"{who} sign in, and without auth settings nobody can: set HOST_AUTH_ISSUER "
                    "and HOST_AUTH_AUDIENCE, or HOST_AUTH_TOKENS, where the host runs; host "
                    "serve refuses to start without them",
                )
            )
    return found


def elicitation(
    tools: list[CheckedTool], server: Server, servers: list[tuple[Document, Any]]
) -> list[Diagnostic]:
    """Tools that ask while elicitation is off: an error, or a warning for the kill switch."""
    if server.elicitation_enabled:
        return []
    asking = [
        (doc, question)
        for doc in tools
        if (question := next((s for s in doc.tool.steps if isinstance(s, Ask | Confirm)), None))
    ]
    if not asking:
        return []
    if server.elicitation_switched_off:
        # NOTE: `enabled: false` written out is a deliberate switch (an incident, a rollout),
        # not a forgotten line: serving goes on and asking calls get ELICITATION_DISABLED.
        names = [doc.tool.name for doc, _ in asking]
        shown = ", ".join(names[:3]) + (f" and {len(names) - 3} more" if len(names) > 3 else "")
        return [
            warning(
                servers[0][0].locs.value(("elicitation", "enabled")),
                "elicitation-off",
                f"elicitation is switched off (enabled: false): every call of {shown} that needs "
                "to ask the user gets ELICITATION_DISABLED; set enabled: true to let them ask",
            )
        ]
    found = []
    for doc, question in asking:
        kind = "ask" if isinstance(question, Ask) else "confirm"
        if servers:
            where = servers[0][0].file
            fix = f"set `elicitation: {{enabled: true}}` in the kind: server document ({where})"
        else:
            fix = "add a kind: server document with `elicitation: {enabled: true}` to the specs"
        found.append(
            error(
                question.pos,
                "elicitation-disabled",
                f"'{doc.tool.name}' asks the user ({kind} '{question.name}') but elicitation is "
                f"not enabled, so every call would fail; {fix}",
            )
        )
    return found
