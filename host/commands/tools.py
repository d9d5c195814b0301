"""``host tools``: the tools a spec directory defines, with their questions, scopes and hints.

Read from the specs (nothing is imported or run), so it works on a laptop without the handlers'
databases. ``host call --list`` shows the same first lines for a running host, from ``tools/list``.
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Mapping
from typing import Any

from host.commands.options import add_handlers, add_specs, checked_project
from host.spec.durations import format_duration
from host.spec.model import Act, Approve, Ask, Confirm, Project, Read, Remember, Tool

__all__ = ["configure", "describe_listed", "run", "tool_summary"]


_HINTS = {
    "readOnlyHint": "read-only",
    "destructiveHint": "destructive",
    "idempotentHint": "idempotent",
    "openWorldHint": "open world",
}


def configure(parser: argparse.ArgumentParser) -> None:
    """Add ``host tools``' arguments to its subparser."""
    add_specs(parser)
    add_handlers(parser)
    parser.add_argument("--format", choices=("text", "json"), default="text")


def run(args: argparse.Namespace) -> int:
    """List the tools; 2 when the specs have errors (printed as ``host validate`` prints them)."""
    project = checked_project(args, "tools")
    if project is None:
        return 2
    if args.format == "json":
        print(json.dumps([tool_summary(t, project) for t in project.tools], indent=2))
        return 0
    for tool in project.tools:
        print("\n".join(_text(tool_summary(tool, project))))
        print()
    return 0


def tool_summary(tool: Tool, project: Project) -> dict[str, Any]:
    """What ``host tools --format json`` says about one tool."""
    questions = []
    for step in tool.steps:
        if isinstance(step, Ask | Confirm):
            question: dict[str, Any] = {
                "name": step.name,
                "kind": "confirm" if isinstance(step, Confirm) else "ask",
                "message": step.message,
            }
            if step.when is not None:
                question["when"] = step.when
            if isinstance(step, Ask):
                question["fields"] = {f.name: f.schema for f in step.fields}
                if step.url:
                    question["mode"] = "url"  # NOTE: asked on the host's page, not the client
            elif step.remember is not None:
                question["remember_s"] = step.remember.for_s
                question["remember"] = _remember(step.remember)
            questions.append(question)
        elif isinstance(step, Approve):
            questions.append(
                {
                    "name": step.name,
                    "kind": "approve",
                    "message": step.message,
                    "approvers": list(step.approvers),
                    "count": step.count,
                    "wait_s": step.wait_s,
                    "expires_s": step.expires_s,
                    **({"when": step.when} if step.when is not None else {}),
                }
            )
    summary: dict[str, Any] = {
        "name": tool.name,
        "title": tool.title,
        "description": tool.description,
        "annotations": tool.annotations,
        "input": tool.input,
        "output": tool.output,
        "scopes": [
            *project.server.scopes,
            *(s for s in tool.scopes if s not in project.server.scopes),
        ],
        "reads": [s.call for s in tool.steps if isinstance(s, Read)],
        "questions": questions,
        "act": next((s.call for s in tool.steps if isinstance(s, Act)), None),
        "read_only": tool.read_only,
        "returns": _returns(tool),
        "file": tool.pos.file,
        "line": tool.pos.line,
    }
    lock = _lock(tool.act)
    if lock is not None:
        summary["lock"] = lock
    return summary


def _text(summary: Mapping[str, Any]) -> list[str]:
    lines = describe_listed(
        {
            "name": summary["name"],
            "title": summary["title"],
            "description": summary["description"],
            "inputSchema": summary["input"],
            "annotations": summary["annotations"],
        }
    )
    for question in summary["questions"]:
        when = f" when {question['when']}" if "when" in question else ""
        fields = ", ".join(question.get("fields", {}))
        what = f" ({fields})" if fields else ""
        if question["kind"] == "approve":
            who = " or ".join(question["approvers"])
            lines.append(f"  approval: {question['name']} ({question['count']} of {who}){when}")
            continue
        kind = "url ask" if question.get("mode") == "url" else question["kind"]
        lines.append(f"  asks: {question['name']} ({kind}){what}{when}")
        if "remember" in question:
            remember = question["remember"]
            lines.append(f"    remembers a yes for {remember['for']}, per {remember['key']}")
    if not summary["questions"]:
        lines.append("  asks: nothing")
    if summary["scopes"]:
        lines.append(f"  scopes: {' '.join(summary['scopes'])}")
    where = f"({summary['file']}:{summary['line']})"
    if summary["read_only"]:
        lines.append(f"  acts: nothing (read-only); returns {summary['returns']}  {where}")
    else:
        lines.append(f"  acts: {summary['act']}  {where}")
    lock = summary.get("lock")
    if lock is not None:
        wait = f"waits up to {lock['wait']}" if lock["wait"] else "does not wait"
        lines.append(f"    one at a time per {', '.join(lock['names'])}; {wait} for the lock")
    return lines


def _lock(act: Act | None) -> dict[str, Any] | None:
    """An act's ``lock:``: the names whose values key it, and how long a call waits for it."""
    if act is None or not act.lock:
        return None
    wait = format_duration(act.lock_wait_s) if act.lock_wait_s else None
    return {"names": list(act.lock), "wait": wait, "wait_s": act.lock_wait_s}


def _remember(remember: Remember) -> dict[str, Any]:
    """A confirm's ``remember:`` policy: how long a yes lasts, and what it is about."""
    key = remember.key
    if key is None:
        about = "call arguments (all of them)"
    elif isinstance(key, str):
        about = key
    else:
        about = ", ".join(key)
    return {"for": format_duration(remember.for_s), "key": about}


def _returns(tool: Tool) -> str | None:
    """What a read-only tool returns: its ``result:``, or its last read (None with an act)."""
    if not tool.read_only:
        return None
    if tool.result is not None:
        return "its result:"
    last = next((s.name for s in reversed(tool.steps) if isinstance(s, Read)), None)
    return f"its last read ({last})"


def describe_listed(tool: Mapping[str, Any]) -> list[str]:
    """An MCP ``Tool`` object (as ``tools/list`` sends it) as a few lines for a terminal."""
    hints = [
        word for key, word in _HINTS.items() if (tool.get("annotations") or {}).get(key) is True
    ]
    head = str(tool.get("name"))
    if tool.get("title"):
        head += f"  {tool['title']}"
    if hints:
        head += f"  [{', '.join(hints)}]"
    description = " ".join(str(tool.get("description") or "").split())
    lines = [head, f"  {description}"] if description else [head]
    schema = tool.get("inputSchema") or {}
    required = set(schema.get("required") or ())
    arguments = [
        f"{name} ({prop.get('type', 'any')}{', required' if name in required else ''})"
        for name, prop in (schema.get("properties") or {}).items()
        if isinstance(prop, Mapping)
    ]
    lines.append(f"  arguments: {', '.join(arguments) if arguments else 'none'}")
    return lines
