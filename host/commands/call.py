"""``host call TOOL``: call a tool and answer its questions in the terminal.

Talks to a running host (``--url``) or serves a spec directory in-process (``--specs``, the
default), and prints the result. The questions are asked as real forms on stderr, so the result
on stdout can be piped.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import secrets
import sys
from collections.abc import Mapping
from dataclasses import replace
from typing import Any

from host.auth import Issued, local_user
from host.client.answers import Elicitation
from host.client.mcp import URL_CAPABILITIES, McpClient
from host.client.tasks import with_tasks
from host.client.wire import HttpReply, HttpTransport, WsgiTransport
from host.commands.options import (
    add_handlers,
    add_specs,
    add_tool_arguments,
    handlers_dir,
    specs_dir,
    tool_arguments,
)
from host.commands.prompt import Prompter
from host.commands.tools import describe_listed
from host.errors import HostError, SpecError
from host.spec.report import format_diagnostics

__all__ = ["configure", "run"]

CLIENT = {"name": "host-call", "version": "1"}


def configure(parser: argparse.ArgumentParser) -> None:
    """Add ``host call``'s arguments to its subparser."""
    parser.add_argument("tool", nargs="?", help="the tool to call (leave out to list them)")
    parser.add_argument("--list", action="store_true", help="list the tools that can be called")
    add_tool_arguments(parser)
    where = parser.add_mutually_exclusive_group()
    where.add_argument(
        "--url", help="a running host's MCP endpoint, e.g. http://127.0.0.1:8000/mcp"
    )
    add_specs(where, "serve this spec directory in-process")
    add_handlers(parser)
    parser.add_argument(
        "--token",
        metavar="TOKEN",
        help="the bearer token for a protected host (--url); default: $HOST_TOKEN",
    )


class _Terminal(HttpTransport):
    """A running host, for a person: a refused token is a sentence, not a protocol error."""

    def send(
        self, method: str, path: str, body: bytes | None, headers: Mapping[str, str]
    ) -> HttpReply:
        """Send one request; 401 and 403 become a :class:`HostError` that says what to do."""
        reply = super().send(method, path, body, headers)
        challenge = reply.headers.get("www-authenticate", "")
        if reply.status == 401 and self.token is None:
            raise HostError(
                "the host needs a bearer token: pass --token TOKEN or set HOST_TOKEN "
                "(host token create makes one, or ask your identity provider)"
            )
        if reply.status == 401:
            raise HostError("the host refused the token (unknown, revoked, expired or not for it)")
        if reply.status == 403:
            needed = re.search(r'scope="([^"]*)"', challenge)
            scopes = needed.group(1) if needed else "unknown"
            raise HostError(
                f"the host refused the call: the token lacks scopes it needs ({scopes})"
            )
        return reply


def _client(args: argparse.Namespace) -> McpClient:
    if args.url:
        token = args.token or os.environ.get("HOST_TOKEN") or None
        # NOTE: a running host's pages can be opened in a browser: URL asks are answered there.
        # It speaks tasks: a wait for someone else's approval is polled, however long, with its
        # status on stderr, instead of a held request that ends "approval pending".
        client = McpClient(
            _Terminal(args.url, token=token),
            client_info=CLIENT,
            capabilities=with_tasks(URL_CAPABILITIES, True),
        )
        client.say = _progress
        return client
    if args.token:
        raise HostError("--token is for a running host (--url); in-process you call as yourself")
    # Only in-process calls need the server's code.
    from host.assembly import assemble
    from host.settings import Settings
    from host.spec import load_project
    from host.testing.client import McpClient as KitClient
    from host.testing.records import AuditKit
    from host.web.app import build_app

    specs = specs_dir(args.specs)
    if not specs.is_dir():
        raise HostError(f"no spec directory {specs} (use --specs DIR or --url URL)")
    settings = Settings.from_env()
    if not settings.secrets:
        # NOTE: one process asks and answers, so a key of its own is right; no warning needed.
        settings = replace(settings, secrets=(secrets.token_urlsafe(32),))
    # NOTE: in-process, the caller is whoever runs the command, holding every scope the tools
    # need, as over stdio: whoever can start the host can do anything it does.
    issued = Issued()
    project = load_project(specs, handlers_dir(args.handlers, specs))
    token = issued.mint(local_user().principal, project.scopes)
    served = assemble(settings, project)
    app = build_app(served, issued)
    # NOTE: the audit trail is how the command learns which confirms a remembered yes skipped.
    audit = AuditKit(served.store, served.flush)
    return KitClient(WsgiTransport(app, token=token), client_info=CLIENT, audit=audit)


def _progress(message: str) -> None:
    """A task's new status, as a person at the terminal reads a wait's progress."""
    print(f"host call: {message}", file=sys.stderr, flush=True)


def run(args: argparse.Namespace) -> int:
    """Call the tool (or list them); the exit status.

    0 on success, 1 for a tool error or a JSON-RPC error, 2 for specs with errors.
    """
    try:
        client = _client(args)
    except SpecError as exc:
        sys.stderr.write(format_diagnostics(sorted(exc.diagnostics)))
        print(f"host call: {exc.message}; fix them first (host validate shows the same)",
              file=sys.stderr)  # fmt: skip
        return 2
    tools = client.tools.list()
    if args.list or args.tool is None:
        for listed in tools:
            print("\n".join(describe_listed(listed)))
        return 0
    tool = tools.get(args.tool)
    if tool is None:
        print(f"host call: no tool {args.tool!r}; the host has: {', '.join(tools.names)}",
              file=sys.stderr)  # fmt: skip
        return 1
    prompter = Prompter(input, sys.stderr)

    def answer(question: Elicitation) -> dict[str, Any]:
        if question.url is not None:
            return prompter.page(question.message, question.url)
        return prompter.answer(question.message, question.requested_schema)

    arguments = tool_arguments(args, tool.get("inputSchema", {}))
    result = client.call_tool(args.tool, arguments, answer)
    if result.error is not None:
        error = result.error
        print(f"error {error.code}: {error.message}", file=sys.stderr)
        if error.data is not None:
            print(json.dumps(error.data, indent=2), file=sys.stderr)
        return 1
    _say_remembered(client, args.tool)
    raw = result.raw or {}
    if "structuredContent" in raw:
        print(json.dumps(raw["structuredContent"], indent=2, ensure_ascii=False))
    else:
        print("\n".join(_block(c) for c in result.content))
    return 1 if result.is_error else 0


def _say_remembered(client: McpClient, tool: str) -> None:
    """Tell the person which confirms were not asked because a yes is remembered (in-process)."""
    from host.testing.client import McpClient as KitClient

    if not isinstance(client, KitClient):  # NOTE: a running host's (--url) audit trail is not here
        return
    records = client.audit.records(tool=tool, limit=1)
    for used in records[0].approvals if records else ():
        if used.get("via") == "remembered":
            print(
                f"host call: the confirm {used['question']!r} was not asked: a yes given before "
                f"is remembered (approval {used.get('approval', '?')}; host approvals remembered "
                "shows it, host approvals revoke ID asks again)",
                file=sys.stderr,
            )


def _block(block: Mapping[str, Any]) -> str:
    """A content block as a line of the terminal: text as it is, anything else summarised."""
    kind = block.get("type")
    if kind == "text":
        return str(block.get("text", ""))
    if kind in ("image", "audio"):
        size = len(str(block.get("data", ""))) * 3 // 4
        return f"[{kind} {block.get('mimeType', '?')}, {size} bytes]"
    if kind == "resource":
        resource = block.get("resource") or {}
        return f"[resource {resource.get('uri', '?')}]\n{resource.get('text', '')}".rstrip()
    if kind == "resource_link":
        return f"[link {block.get('uri', '?')}]"
    return json.dumps(block)
