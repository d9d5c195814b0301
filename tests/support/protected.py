"""What the auth tests share: a handler that tells who called, and tools that need scopes."""

from __future__ import annotations

__all__ = ["SCOPED", "WHO"]

#: ``who.py``: a handler that returns the caller as it sees it.
WHO = """
def whoami(ctx):
    return {"principal": ctx.principal, "scopes": sorted(ctx.scopes),
            "sub": ctx.claims.get("sub"), "aud": ctx.claims.get("aud")}
"""

SCOPED = """
kind: server
name: desk
version: "1"
scopes: [tickets:read]
elicitation: {enabled: true}
---
kind: tool
name: peek
description: Reads; needs only the server's scope.
annotations: {readOnlyHint: true}
steps:
  - act: who:whoami
---
kind: tool
name: wipe
description: Writes; needs tickets:write on top.
scopes: [tickets:write]
steps:
  - confirm: sure
    message: Wipe?
  - act: who:whoami
"""
