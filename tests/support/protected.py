"""What the auth tests share: a who-am-I handler, tools that need scopes, how a 401 looks."""

from __future__ import annotations

import falcon.testing

__all__ = ["METADATA", "SCOPED", "WHO", "WHOAMI", "YES", "refused"]

METADATA = "https://tools.example.com/.well-known/oauth-protected-resource/mcp"


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

WHOAMI = """
kind: server
name: who
version: "1"
elicitation: {enabled: true}
---
kind: tool
name: whoami
description: Who is calling, as the handler sees it.
steps:
  - confirm: sure
    message: Tell who you are?
  - act: who:whoami
"""

YES = {"sure": {"action": "accept", "content": {"confirm": True}}}


def refused(response: falcon.testing.Result, error: str | None = "invalid_token") -> None:
    assert response.status_code == 401, response.text
    challenge = response.headers["www-authenticate"]
    expected = f'resource_metadata="{METADATA}"'
    if error is None:
        assert challenge == f"Bearer {expected}"
    else:
        assert challenge == f'Bearer error="{error}", {expected}'
    assert response.json["error"] == (error or "missing")
