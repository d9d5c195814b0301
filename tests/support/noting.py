"""A project of one tool that asks a yes before it acts: for tests of what the act leaves behind."""

from __future__ import annotations

__all__ = ["HANDLERS", "YES", "specs"]

HANDLERS = """
def note(word):
    return {"noted": word}
"""

#: The answer that lets ``note`` act.
YES = {"go": {"action": "accept", "content": {"confirm": True}}}


def specs(server: str) -> str:
    """The specs of a server named ``server`` with the one tool ``note``."""
    return f"""
kind: server
name: {server}
version: "1"
elicitation: {{enabled: true}}
---
kind: tool
name: note
description: Notes a word after a yes.
input: {{properties: {{word: {{type: string}}}}, required: [word]}}
steps:
  - confirm: go
    message: Note {{{{ word }}}}?
  - act: n:note
"""
