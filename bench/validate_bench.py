"""How long ``check_project`` takes on a large spec directory (the goal: a few seconds at most).

Generates ``n`` realistic tools (a read, an ask with template options, a confirm, an act, an input
schema and an example each), ten per file, with their handlers, in a temporary directory; then times
one full check (load, schema pass, every rule, handler parsing).

Run: ``python bench/validate_bench.py [N]`` (default 1000); or call :func:`main` from a runner.
"""

from __future__ import annotations

import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from host.spec.check import check_project

__all__ = ["main", "write_project"]

PER_FILE = 10

SERVER = "kind: server\nname: bench\nversion: 1.0.0\nelicitation: {enabled: true}\n"

TOOL = """\
kind: tool
name: tool_{i}
title: Tool {i}
description: >-
  Reassign ticket {i} to an agent, after the user picks one and confirms.
annotations: {{destructiveHint: true}}
input:
  properties:
    id: {{type: string, description: "Ticket id, like T-1"}}
    note: {{type: string, maxLength: 200}}
  required: [id]
output:
  type: object
  properties:
    id: {{type: string}}
    agent: {{type: string}}
steps:
  - read: ticket
    call: bench_handlers:get_ticket
    missing: There's no ticket {{{{ id }}}} in queue {i}.
  - read: agents
    call: bench_handlers:list_agents
  - ask: pick
    message: Who should take {{{{ id }}}} ("{{{{ ticket.title }}}}") in queue {i}?
    form:
      agent: {{type: string, enum: "{{{{ agents | map(attribute='name') | list }}}}"}}
      urgent: {{type: boolean, default: false}}
    declined: {{id: "{{{{ id }}}}", assigned: false, reason: "{{{{ pick.action }}}} ({i})"}}
    cancelled: {{id: "{{{{ id }}}}", assigned: false}}
  - confirm: sure
    message: Give {{{{ id }}}} to {{{{ agent }}}}{{% if urgent %}} now{{% endif %}} ({i})?
    declined: {{id: "{{{{ id }}}}", assigned: false}}
    cancelled: {{id: "{{{{ id }}}}", assigned: false}}
    unticked: {{id: "{{{{ id }}}}", assigned: false}}
  - act: bench_handlers:assign_{i}
examples:
  - name: assigns after a yes
    arguments: {{id: T-1}}
    answers:
      pick: {{action: accept, content: {{agent: Sam, urgent: false}}}}
      sure: {{action: accept, content: {{confirm: true}}}}
    expect: {{result: {{agent: Sam}}}}
"""

HANDLERS_HEAD = """\
def get_ticket(id):
    return {"id": id, "title": "A ticket"}


def list_agents():
    return [{"name": "Sam"}, {"name": "Nour"}]
"""

HANDLER = """

def assign_{i}(id, agent, ticket, ctx, note=None):
    return {{"id": id, "agent": agent}}
"""


def write_project(root: Path, n: int) -> Path:
    """Write ``n`` tools under ``root/specs`` and their handlers; the specs directory."""
    specs = root / "specs"
    handlers = root / "handlers"
    specs.mkdir(parents=True)
    handlers.mkdir()
    (specs / "server.yaml").write_text(SERVER)
    for start in range(0, n, PER_FILE):
        docs = [TOOL.format(i=i) for i in range(start, min(start + PER_FILE, n))]
        (specs / f"tools_{start // PER_FILE:04d}.yaml").write_text("---\n".join(docs))
    source = HANDLERS_HEAD + "".join(HANDLER.format(i=i) for i in range(n))
    (handlers / "bench_handlers.py").write_text(source)
    return specs


def main(n: int = 1000) -> dict[str, Any]:
    """Time one ``check_project`` over ``n`` generated tools; the numbers as a dict."""
    with tempfile.TemporaryDirectory(prefix="validate-bench-") as tmp:
        specs = write_project(Path(tmp), n)
        started = time.perf_counter()
        result = check_project([specs])
        seconds = time.perf_counter() - started
    if result.project is None or result.diagnostics:
        raise RuntimeError(f"the generated specs should be clean: {result.diagnostics[:3]}")
    return {
        "tools": n,
        "files": -(-n // PER_FILE) + 1,
        "seconds": round(seconds, 3),
        "ms_per_tool": round(seconds * 1000 / max(n, 1), 3),
        "diagnostics": len(result.diagnostics),
    }


if __name__ == "__main__":
    numbers = main(int(sys.argv[1]) if len(sys.argv) > 1 else 1000)
    print(
        f"check_project: {numbers['tools']} tools in {numbers['files']} files, "
        f"{numbers['seconds']:.2f} s ({numbers['ms_per_tool']:.2f} ms per tool)"
    )
