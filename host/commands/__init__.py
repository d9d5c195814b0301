"""The `host` subcommands: one module each, with `configure(parser)` and `run(args) -> int`.

:data:`SUMMARIES` holds each command's line of help, in the order `host --help` lists them. They
are here rather than in the modules so that `host --help` (or a mistyped command) imports none of
them: importing every command for its line cost each such run 0.8 s of CPU.
"""

__all__ = ["SUMMARIES"]

SUMMARIES: dict[str, str] = {
    "serve": "serve the specs over MCP (Streamable HTTP) under gunicorn",
    "stdio": "serve the specs over MCP on stdin/stdout (for clients that launch servers)",
    "call": "call a tool and answer its questions in the terminal",
    "plan": "show what a call would ask and do, without running its act",
    "tools": "list the tools of a spec directory: arguments, questions, scopes, hints",
    "validate": "check specs and handlers; print every problem with its place",
    "schema": "print the spec language's JSON Schema",
    "test": "run the examples written in the specs",
    "diff": "show what a spec change does: tools added, removed, changed; what a reload voids",
    "init": "create a starter spec directory: a server, a tool with a confirm, its handler",
    "token": "create, list and revoke static bearer tokens (HOST_AUTH_TOKENS)",
    "approvals": (
        "remembered approvals (remembered, revoke); "
        "approval requests on a host (pending, approve, reject)"
    ),
    "audit": "show the audit trail: who called which tool, what they answered, how it ended",
    "sessions": "list and end the sessions of people signed in to the pages (the inbox)",
}
