"""Generate spec directories of any size from the help-desk example's three tool shapes.

Tool ``i`` takes the shape ``i % 3``: a read-only listing (``list_outbox``), a read, a yes/no
question and an act (``close_ticket``), or a read, a conditional form and an act
(``assign_ticket``). Every tool calls the help-desk handlers, so a generated directory serves and
validates with ``HOST_HANDLERS`` pointing at ``handlers/``.
"""

from __future__ import annotations

from pathlib import Path

__all__ = ["SERVER", "generate", "tool_yaml"]

SERVER = """\
kind: server
name: generated
version: 1.0.0
instructions: Generated tools for benchmarks.
elicitation:
  enabled: true
"""

_LIST = """\
kind: tool
name: {name}
title: List outbox {i}
description: List the emails sent to customers (generated tool {i}).
annotations: {{readOnlyHint: true}}
input: {{}}
output:
  type: object
  properties:
    emails: {{type: array, items: {{type: string}}}}
  required: [emails]
steps:
  - act: helpdesk:list_outbox
"""

_CLOSE = """\
kind: tool
name: {name}
title: Close ticket {i}
description: >-
  Close a support ticket and email the customer that it's resolved (generated tool {i}).
annotations: {{destructiveHint: true}}
input:
  properties:
    id: {{type: string, description: "Ticket id, like T-1"}}
  required: [id]
steps:
  - read: ticket
    call: helpdesk:get_ticket
    missing: There's no ticket {{{{ id }}}}.
  - confirm: close
    message: Close {{{{ id }}}} ("{{{{ ticket.title }}}}") and email the customer ({i})?
    label: Tick to close the ticket
    declined: {{id: "{{{{ id }}}}", closed: false, reason: The user said no.}}
  - act: helpdesk:close_ticket
"""

_ASSIGN = """\
kind: tool
name: {name}
title: Assign ticket {i}
description: >-
  Assign a support ticket to an agent; asks who when no agent is given (generated tool {i}).
annotations: {{destructiveHint: false, idempotentHint: true}}
input:
  properties:
    id: {{type: string, description: "Ticket id, like T-1"}}
    agent: {{type: string, enum: [Nour, Sam, Priya], description: Who should take the ticket}}
  required: [id]
steps:
  - read: ticket
    call: helpdesk:get_ticket
    missing: There's no ticket {{{{ id }}}}.
  - ask: pick
    when: agent is undefined
    message: Who should take {{{{ id }}}} ("{{{{ ticket.title }}}}")?
    form:
      agent: {{type: string, enum: [Nour, Sam, Priya], description: Support agent}}
    declined: {{id: "{{{{ id }}}}", assigned: false, reason: The user didn't pick an agent.}}
  - act: helpdesk:assign_ticket
"""

_SHAPES = (_LIST, _CLOSE, _ASSIGN)


def tool_yaml(i: int) -> str:
    """The YAML document of generated tool number ``i``."""
    return _SHAPES[i % 3].format(name=f"tool_{i:05d}", i=i)


def generate(directory: Path, tools: int, per_file: int = 50) -> Path:
    """Write a server spec and ``tools`` tool specs (``per_file`` to a file) into ``directory``."""
    directory.mkdir(parents=True, exist_ok=True)
    (directory / "server.yaml").write_text(SERVER)
    for start in range(0, tools, per_file):
        docs = [tool_yaml(i) for i in range(start, min(tools, start + per_file))]
        (directory / f"tools_{start // per_file:04d}.yaml").write_text("---\n".join(docs))
    return directory
