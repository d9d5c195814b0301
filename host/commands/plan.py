"""``host plan TOOL``: what a call would do, round by round, without running its act.

Runs the reads (side-effect free by contract), then prints each round's questions (message and
form, rendered), the questions a ``when:`` skips, the answer assumed to go on (or the one given
with ``--answer``), and the act the call would run last. The act never runs.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from host.commands.options import (
    add_handlers,
    add_specs,
    add_tool_arguments,
    checked_project,
    tool_arguments,
)
from host.errors import HostError
from host.machine import CallContext, compile_project
from host.machine.plan import Plan, plan_call
from host.spec.durations import format_duration
from host.spec.model import Approve, Ask, Confirm, Tool

__all__ = ["configure", "render", "run"]

_WIDTH = 100


def configure(parser: argparse.ArgumentParser) -> None:
    """Add ``host plan``'s arguments to its subparser."""
    parser.add_argument("tool", help="the tool to plan a call of")
    add_tool_arguments(parser)
    parser.add_argument(
        "--answer",
        action="append",
        default=[],
        metavar="QUESTION=ANSWER",
        help="answer a question instead of accepting it: decline, cancel, or the form's "
        'content as JSON (\'{"agent": "Sam"}\'); repeatable',
    )
    add_specs(parser)
    add_handlers(parser)
    parser.add_argument("--format", choices=("text", "json"), default="text")


def run(args: argparse.Namespace) -> int:
    """Plan the call; 0 when planned, 1 when the call would fail, 2 when the specs have errors."""
    project = checked_project(args, "plan")
    if project is None:
        return 2
    tool = project.tool(args.tool)
    if tool is None:
        names = ", ".join(t.name for t in project.tools)
        print(f"host plan: no tool {args.tool!r}; the specs have: {names}", file=sys.stderr)
        return 1
    machine = compile_project(project)[tool.name]
    arguments = tool_arguments(args, machine.input_schema)
    data_dir = Path(os.environ.get("HOST_DATA_DIR") or ".host")
    ctx = CallContext(principal="anonymous", tool=tool.name, data_dir=data_dir)
    plan = plan_call(machine, arguments, ctx, _answers(args.answer))
    if args.format == "json":
        print(json.dumps(_plain(plan, tool), indent=2, ensure_ascii=False, default=str))
    else:
        print("\n".join(render(plan, tool)))
    failed = plan.failure is not None or (plan.outcome is not None and plan.outcome.is_error)
    return 1 if failed else 0


def _answers(given: list[str]) -> dict[str, dict[str, Any]]:
    answers: dict[str, dict[str, Any]] = {}
    for item in given:
        name, sep, text = item.partition("=")
        if not sep or not name:
            raise HostError(f"--answer must look like QUESTION=ANSWER, got {item!r}")
        if text in ("accept", "decline", "cancel"):
            answers[name] = {"action": text, "content": {}}
            continue
        try:
            content = json.loads(text)
        except ValueError:
            content = None
        if not isinstance(content, dict):
            raise HostError(
                f"--answer {name}=...: give decline, cancel or the form's content as a JSON "
                f'object, like {name}=\'{{"field": "value"}}\''
            )
        answers[name] = {"action": "accept", "content": content}
    return answers


def render(plan: Plan, tool: Tool) -> list[str]:
    """The plan as the lines ``host plan`` prints."""
    whens = {
        s.name: s.when for s in tool.steps if isinstance(s, Ask | Confirm | Approve) and s.when
    }
    confirms = {s.name for s in tool.steps if isinstance(s, Confirm)}
    lines = [f"plan: {plan.tool} {_short(plan.arguments)}"]
    seen: set[str] = set()
    for planned in plan.rounds:
        lines.append(f"round {planned.number}")
        for name, value in planned.reads:
            again = " (again)" if name in seen else f": {_short(value)}"
            seen.add(name)
            lines.append(f"  read {name}{again}")
        for name in dict.fromkeys(planned.skipped):
            lines.append(f"  skip {name}: when: {whens.get(name, '...')} is false")
        for question in planned.questions:
            kind = "confirm" if question.key in confirms else "ask"
            lines.append(f"  {kind} {question.key}: {question.message}")
            if question.on_page:
                lines.append("      on a page of the host's, shown only to the caller")
            else:
                lines.extend(f"      {line}" for line in _form(question.schema))
            answer = planned.answers[question.key]
            how = "assumed" if question.key in planned.assumed else "given"
            shown = answer.get("action", "?")
            if answer.get("action") == "accept":
                shown += f" {_short(answer.get('content', {}))}"
            lines.append(f"    answer ({how}): {shown}")
        for ask in planned.approvals:
            people = f"{ask.count} approver{'s' if ask.count != 1 else ''}"
            lines.append(f"  approve {ask.step}: {ask.message}")
            lines.append(
                f"    needs {people} holding {' or '.join(ask.approvers)}, not the caller; "
                f"waits up to {ask.wait_s:g}s (assumed approved)"
            )
    if plan.failure is not None:
        lines.append(f"fails: {plan.failure}")
    elif plan.acts:
        parameters = ", ".join(plan.act_parameters)
        lines.append(f"  act {plan.act}({parameters}) would run last; the plan did not run it")
        lines.extend(_lock(tool, plan.arguments))
    elif plan.outcome is not None:
        what = "fails" if plan.outcome.is_error else "ends without acting"
        if plan.read_only and not plan.outcome.is_error and plan.outcome.ending is None:
            what = "returns (read-only: no act)"
        lines.append(f"{what}: {_outcome(plan.outcome)}")
    else:
        lines.append(f"stops: still asking after {len(plan.rounds)} rounds")
    return lines


def _form(schema: Mapping[str, Any]) -> list[str]:
    required = set(schema.get("required") or ())
    lines = []
    for name, field in (schema.get("properties") or {}).items():
        parts = [str(field.get("type", "any"))]
        label = field.get("title") or field.get("description")
        if label:
            parts.append(json.dumps(label, ensure_ascii=False))
        options = field.get("enum") or [o.get("const") for o in field.get("oneOf") or []]
        items = field.get("items") or {}
        options = options or items.get("enum") or [o.get("const") for o in items.get("anyOf") or []]
        if options:
            parts.append("choices: " + ", ".join(str(o) for o in options))
        if "default" in field:
            parts.append(f"default {json.dumps(field['default'])}")
        if name not in required and "default" not in field:
            parts.append("optional")
        lines.append(f"{name}: {', '.join(parts)}")
    return lines


def _outcome(outcome: Any) -> str:
    if outcome.structured is not None:
        return _short(outcome.structured)
    return " ".join(str(c.get("text", c)) for c in outcome.content)


def _short(value: Any) -> str:
    text = json.dumps(value, ensure_ascii=False, default=str)
    return text if len(text) <= _WIDTH else text[: _WIDTH - 3] + "..."


def _lock(tool: Tool, arguments: Mapping[str, Any]) -> list[str]:
    """The lock the act would hold: its names, the values known from the arguments, the wait."""
    act = tool.act
    if act is None or not act.lock:
        return []
    values = ", ".join(f"{n}={_short(arguments[n]) if n in arguments else '?'}" for n in act.lock)
    wait = f"waiting up to {format_duration(act.lock_wait_s)}" if act.lock_wait_s else "not waiting"
    return [f"    holding the lock on {values} ({wait}; busy if another call holds it)"]


def _plain(plan: Plan, tool: Tool) -> dict[str, Any]:
    return {
        "tool": plan.tool,
        "arguments": plan.arguments,
        "rounds": [
            {
                "round": r.number,
                "reads": [name for name, _ in r.reads],
                "skipped": list(dict.fromkeys(r.skipped)),
                "questions": [
                    {
                        "name": q.key,
                        "message": q.message,
                        "form": q.schema,
                        "answer": r.answers[q.key],
                        "assumed": q.key in r.assumed,
                    }
                    for q in r.questions
                ],
                "approvals": [
                    {
                        "name": a.step,
                        "message": a.message,
                        "approvers": list(a.approvers),
                        "count": a.count,
                        "wait_s": a.wait_s,
                        "expires_s": a.expires_s,
                    }
                    for a in r.approvals
                ],
            }
            for r in plan.rounds
        ],
        "act": None if plan.read_only else _plain_act(plan, tool),
        "read_only": plan.read_only,
        "ends": None if plan.outcome is None else plan.outcome.to_result(),
        "failure": plan.failure,
    }


def _plain_act(plan: Plan, tool: Tool) -> dict[str, Any]:
    """The act the plan reached (never ran), and its lock when it has one."""
    act: dict[str, Any] = {"handler": plan.act, "reached": plan.acts, "run": False}
    if tool.act is not None and tool.act.lock:
        act["lock"] = {"names": list(tool.act.lock), "wait_s": tool.act.lock_wait_s}
    return act
