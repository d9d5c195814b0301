"""Which elicitation modes a client declared, and what the core says when a round needs another.

A form question needs ``form`` (or the bare ``elicitation: {}`` of older clients), a URL ask
needs ``url``; a round whose questions need a mode the client lacks fails with -32021.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from host.machine import Question
from host.protocol.steps import Call

__all__ = ["can_elicit_form", "can_elicit_url", "cannot_ask", "missing_modes"]


def can_elicit_url(capabilities: Any) -> bool:
    """Whether declared client capabilities allow a URL question (``elicitation: {url: {}}``)."""
    if not isinstance(capabilities, Mapping):
        return False
    elicitation = capabilities.get("elicitation")
    return isinstance(elicitation, Mapping) and isinstance(elicitation.get("url"), Mapping)


def can_elicit_form(capabilities: Any) -> bool:
    """Whether declared client capabilities allow a form question.

    ``elicitation: {}`` means form only (for compatibility); ``{form: {}}`` says so; ``{url: {}}``
    alone does not allow forms.
    """
    if not isinstance(capabilities, Mapping):
        return False
    elicitation = capabilities.get("elicitation")
    if not isinstance(elicitation, Mapping):
        return False
    return not elicitation or "form" in elicitation


def missing_modes(call: Call, questions: Sequence[Question]) -> list[str]:
    """The elicitation modes the round's questions need and the client did not declare.

    NOTE: a URL ask never falls back to a form or to the fallback tool: its values are never
    to pass through the client.
    """
    missing = []
    if not call.can_ask and any(not q.on_page for q in questions):
        missing.append("form")
    if not call.can_ask_url and any(q.on_page for q in questions):
        missing.append("url")
    return missing


_SHOWS = {"form": "show forms", "url": "open a page in the user's browser"}


def cannot_ask(tool: str, missing: Sequence[str]) -> str:
    """The -32021 message, written for the model that reads it (agent frameworks pass it on).

    NOTE: it says retrying will not help: a framework that hands errors back as retry prompts
    otherwise has the model call the same tool again, forever.
    """
    shows = " or ".join(_SHOWS[m] for m in missing)
    modes = " and ".join(missing)
    return (
        f"{tool} needs the user's answer before it can go on, and this client cannot ask the "
        f"user (it did not declare the elicitation capability for {modes}). Nothing was done. "
        "Retrying will not help. Tell the user that this action needs their answer and that "
        f"they should use an MCP client that can {shows}."
    )
