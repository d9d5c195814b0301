"""Handlers for the conformance suite's test tools (specs in ``conformance/specs``).

Each tool's name, questions and results are fixed by a scenario of the official MCP conformance
suite; see ``conformance/SCENARIOS.md``. The handlers are plain functions like any user's: the host
passes each parameter by name from what is in scope (input fields, answer fields, the ask step's
outcome).
"""

from __future__ import annotations

import json
import logging
from typing import Any

from host import ToolError

__all__ = [
    "always_fail",
    "describe_contact",
    "echo",
    "elicitation_completed",
    "go_ahead",
    "greet",
    "log_to_server",
    "name_and_color",
    "simple_text",
    "state_ok",
    "user_response",
]


def simple_text() -> str:
    """The text the tools-call-simple-text scenario documents."""
    return "This is a simple text response for testing."


def always_fail() -> str:
    """Fail the way a tool should: an error result the model can read, not a protocol error."""
    raise ToolError("This tool intentionally returns an error for testing")


def log_to_server(ctx: Any) -> str:
    """Write to the server's own log; the client asked for no log level, so it must see nothing."""
    log: logging.Logger = ctx.log
    log.info("test_logging_tool ran")
    return "Logged one line to the server log."


def describe_contact(
    name: str | None = None,
    address: dict[str, Any] | None = None,
    contactMethod: str | None = None,
    phone: str | None = None,
    email: str | None = None,
) -> dict[str, Any]:
    """Echo the contact back, so a client can see which fields arrived."""
    given = {
        "name": name,
        "address": address,
        "contactMethod": contactMethod,
        "phone": phone,
        "email": email,
    }
    return {key: value for key, value in given.items() if value is not None}


def user_response(info: dict[str, Any]) -> str:
    """The tools-call-elicitation result: what the user did and what they entered."""
    return f"User response: action={info['action']}, content={json.dumps(info['content'])}"


def elicitation_completed(answer: dict[str, Any]) -> str:
    """The result the SEP-1034 and SEP-1330 scenarios document."""
    content = json.dumps(answer["content"])
    return f"Elicitation completed: action={answer['action']}, content={content}"


def greet(name: str) -> str:
    """Greet the user by the name they gave."""
    return f"Hello, {name}!"


def state_ok(ok: bool) -> str:
    """Reached only once the host has verified the echoed request state."""
    return f"state-ok (ok={json.dumps(ok)})"


def name_and_color(name: str, color: str | None = None) -> str:
    """Both rounds' answers, the first of which came back inside the request state."""
    return f"{name} likes {color or 'no colour in particular'}."


def echo(text: str) -> str:
    """Say back what the user typed."""
    return text


def go_ahead(ok: bool) -> str:
    """The user answered; say so."""
    return "Done." if ok else "The user said not to go ahead."
