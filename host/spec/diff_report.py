"""``host diff``'s three outputs of one :class:`~host.spec.diff.ProjectDiff`: text, JSON, markdown.

Text for a terminal, JSON for programs, markdown for a pull request's comment (a table of the
tools, then each tool's fields in a folded block). Every output says, per tool whose definition
changed, what a reload voids; where a store was read, how many of each.
"""

from __future__ import annotations

import json
from typing import Any

from host.spec.diff import Change, ProjectDiff, ToolDiff

__all__ = ["render", "to_json", "to_markdown", "to_text", "voids_text"]

_SHORT = 72


def render(diff: ProjectDiff, fmt: str) -> str:
    """The diff in ``fmt``: ``text``, ``json`` or ``markdown``."""
    if fmt == "json":
        return to_json(diff)
    if fmt == "markdown":
        return to_markdown(diff)
    return to_text(diff)


def voids_text(tool: ToolDiff) -> str:
    """What a reload does to the tool's calls and approvals, in one sentence."""
    if tool.status == "added":
        return "new: nothing to void"
    if not tool.digest_changed:
        return "definition unchanged: its calls and approvals carry over a reload"
    between = "ends its calls between rounds ('the tool changed')"
    voids = tool.voids
    if voids is None:
        return f"a reload {between} and voids its remembered approvals and open requests"
    if not voids.total:
        return f"a reload {between}; the store holds no remembered approvals or open requests"
    counts = (
        (voids.remembered, "remembered approval{}"),
        (voids.pending, "pending request{}"),
        (voids.approved, "approved request{} not yet acted on"),
    )
    shown = [f"{n} " + what.format("" if n == 1 else "s") for n, what in counts if n]
    listed = shown[0] if len(shown) == 1 else ", ".join(shown[:-1]) + " and " + shown[-1]
    return f"a reload voids {listed} of {tool.name}, and {between}"


def _value(value: Any) -> str:
    if value is None:
        return "(none)"
    text = json.dumps(value, ensure_ascii=False, sort_keys=True, default=str)
    return text if len(text) <= _SHORT else text[: _SHORT - 1] + "…"


def _field(change: Change) -> str:
    return f"{change.aspect}.{change.path}" if change.path else change.aspect


def _summary(diff: ProjectDiff) -> str:
    seen = [t for t in diff.tools if t.caller_sees]
    if not seen:
        return "The server changed; no tool did." if diff.server else (
            "Nothing a caller sees changed."
        )  # fmt: skip
    counts = {s: sum(1 for t in seen if t.status == s) for s in ("added", "removed", "changed")}
    parts = [f"{n} {s}" for s, n in counts.items() if n]
    tools = f"{len(seen)} tool{'' if len(seen) == 1 else 's'} changed for callers"
    server = "; the server changed" if diff.server else ""
    return f"{tools} ({', '.join(parts) or 'none'}){server}."


def to_text(diff: ProjectDiff) -> str:
    """For a terminal: a block per tool, its fields, and what a reload voids."""
    lines = [f"host diff {diff.old} → {diff.new}"]
    if diff.store:
        lines.append(f"store: {diff.store}")
    for note in diff.notes:
        lines.append(f"note: {note}")
    for change in diff.server:
        lines.append(f"  server   {change.path}: {_value(change.old)} → {_value(change.new)}")
    for tool in diff.tools:
        aspects = ", ".join(tool.aspects)
        lines.append(f"  {tool.status:<8} {tool.name}" + (f"   ({aspects})" if aspects else ""))
        for change in tool.changes:
            lines.append(
                f"             {_field(change)}: {_value(change.old)} → {_value(change.new)}"
            )
        lines.append(f"             {voids_text(tool)}")
    lines.append(_summary(diff))
    return "\n".join(lines) + "\n"


def to_json(diff: ProjectDiff) -> str:
    """For programs: every tool, every field, the digests and the counts."""
    document = {
        "old": diff.old,
        "new": diff.new,
        "changed": diff.caller_sees,
        "store": diff.store,
        "notes": list(diff.notes),
        "server": [_change(c) for c in diff.server],
        "tools": [_tool(t) for t in diff.tools],
    }
    return json.dumps(document, indent=2, ensure_ascii=False, default=str) + "\n"


def _change(change: Change) -> dict[str, Any]:
    return {"aspect": change.aspect, "path": change.path, "old": change.old, "new": change.new}


def _tool(tool: ToolDiff) -> dict[str, Any]:
    voids = tool.voids
    return {
        "name": tool.name,
        "status": tool.status,
        "caller_sees": tool.caller_sees,
        "aspects": tool.aspects,
        "changes": [_change(c) for c in tool.changes],
        "definition": {
            "old": tool.old_digest,
            "new": tool.new_digest,
            "changed": tool.digest_changed,
        },
        "voids": None
        if voids is None
        else {
            "remembered_approvals": voids.remembered,
            "pending_requests": voids.pending,
            "approved_requests": voids.approved,
        },
        "reload": voids_text(tool),
    }


def _md(text: str) -> str:
    """Text safe in a markdown table cell and a code span."""
    return text.replace("`", "'").replace("|", "\\|").replace("\n", " ")


def to_markdown(diff: ProjectDiff) -> str:
    """For a pull request's comment: a table of the tools, then each tool's fields, folded."""
    lines = [f"### Spec changes: `{_md(diff.old)}` → `{_md(diff.new)}`", "", _summary(diff), ""]
    if diff.tools:
        lines += [
            "| Tool | Change | What changed | Definition | On reload |",
            "| --- | --- | --- | --- | --- |",
        ]
        for tool in diff.tools:
            definition = "changed" if tool.digest_changed else "unchanged"
            lines.append(
                f"| `{_md(tool.name)}` | {tool.status} | {_md(', '.join(tool.aspects)) or '—'} "
                f"| {definition} | {_md(voids_text(tool))} |"
            )
        lines.append("")
    if diff.server:
        lines += ["**Server**", ""]
        lines += [f"- `{_md(c.path)}`: `{_md(_value(c.old))}` → `{_md(_value(c.new))}`"
                  for c in diff.server]  # fmt: skip
        lines.append("")
    for tool in (t for t in diff.tools if t.changes):
        count = len(tool.changes)
        lines += [
            f"<details><summary><code>{_md(tool.name)}</code>: {count} "
            f"field{'' if count == 1 else 's'}</summary>",
            "",
        ]
        lines += [f"- `{_md(_field(c))}`: `{_md(_value(c.old))}` → `{_md(_value(c.new))}`"
                  for c in tool.changes]  # fmt: skip
        lines += ["", "</details>", ""]
    if diff.store:
        lines.append(f"Counted in the store at `{_md(diff.store)}`.")
    lines += [f"_{_md(note)}_" for note in diff.notes]
    return "\n".join(lines).rstrip("\n") + "\n"
