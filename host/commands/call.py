"""``host call TOOL``: call a tool and answer its questions in the terminal.

Talks to a running host (``--url``) or serves a spec directory in-process (``--specs``, the
default), and prints the result. The questions are asked as real forms on stderr, so the result
on stdout can be piped.
"""

from __future__ import annotations

import argparse
import http.client
import json
import secrets
import sys
from collections.abc import Mapping
from dataclasses import replace
from typing import Any
from urllib.parse import urlsplit

from host.commands.options import add_handlers, add_specs, handlers_dir, specs_dir
from host.commands.prompt import Prompter
from host.errors import HostError
from host.testing.answers import Elicitation
from host.testing.client import McpClient
from host.testing.wire import HttpReply, WsgiTransport

__all__ = ["HELP", "configure", "run"]

HELP = "call a tool and answer its questions in the terminal"


class HttpTransport:
    """One kept-alive HTTP connection to a running host."""

    def __init__(self, url: str) -> None:
        parts = urlsplit(url)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise HostError(f"--url must be an http(s) URL like http://127.0.0.1:8000/mcp: {url}")
        factory = (
            http.client.HTTPSConnection if parts.scheme == "https" else http.client.HTTPConnection
        )
        self.conn = factory(parts.hostname, parts.port, timeout=600)
        self.path = parts.path or "/mcp"

    def send(
        self, method: str, path: str, body: bytes | None, headers: Mapping[str, str]
    ) -> HttpReply:
        """Send one request; connection failures become a clear error."""
        try:
            self.conn.request(method, self.path, body, dict(headers))
            response = self.conn.getresponse()
            data = response.read()
        except OSError as exc:
            raise HostError(f"cannot reach the host: {exc}") from None
        return HttpReply(response.status, {k.lower(): v for k, v in response.getheaders()}, data)


def configure(parser: argparse.ArgumentParser) -> None:
    """Add ``host call``'s arguments to its subparser."""
    parser.add_argument("tool", help="the tool to call")
    parser.add_argument(
        "--arg",
        action="append",
        default=[],
        metavar="NAME=VALUE",
        help="an argument (repeatable); VALUE is read as JSON when the schema wants a non-string",
    )
    parser.add_argument("--json", metavar="OBJECT", help="all arguments as one JSON object")
    where = parser.add_mutually_exclusive_group()
    where.add_argument(
        "--url", help="a running host's MCP endpoint, e.g. http://127.0.0.1:8000/mcp"
    )
    add_specs(where, "serve this spec directory in-process")
    add_handlers(parser)


def _arguments(args: argparse.Namespace, schema: Mapping[str, Any]) -> dict[str, Any]:
    arguments: dict[str, Any] = {}
    if args.json:
        try:
            loaded = json.loads(args.json)
        except ValueError as exc:
            raise HostError(f"--json is not valid JSON: {exc}") from None
        if not isinstance(loaded, dict):
            raise HostError("--json must be a JSON object")
        arguments.update(loaded)
    properties = schema.get("properties", {})
    for item in args.arg:
        name, sep, text = item.partition("=")
        if not sep or not name:
            raise HostError(f"--arg must look like NAME=VALUE, got {item!r}")
        if properties.get(name, {}).get("type") == "string":
            arguments[name] = text
            continue
        try:
            arguments[name] = json.loads(text)
        except ValueError:
            arguments[name] = text
    return arguments


def _client(args: argparse.Namespace) -> McpClient:
    if args.url:
        return McpClient(HttpTransport(args.url))
    # Only in-process calls need the server's code.
    from host.settings import Settings
    from host.web.app import create_app

    specs = specs_dir(args.specs)
    if not specs.is_dir():
        raise HostError(f"no spec directory {specs} (use --specs DIR or --url URL)")
    settings = Settings.from_env()
    if not settings.secrets:
        # NOTE: one process asks and answers, so a key of its own is right; no warning needed.
        settings = replace(settings, secrets=(secrets.token_urlsafe(32),))
    app = create_app(specs, handlers_dir(args.handlers, specs), settings=settings)
    return McpClient(WsgiTransport(app))


def run(args: argparse.Namespace) -> int:
    """Call the tool; 0 on success, 1 for a tool error or a JSON-RPC error."""
    client = _client(args)
    tools = client.tools.list()
    tool = tools.get(args.tool)
    if tool is None:
        print(f"host call: no tool {args.tool!r}; the host has: {', '.join(tools.names)}",
              file=sys.stderr)  # fmt: skip
        return 1
    prompter = Prompter(input, sys.stderr)

    def answer(question: Elicitation) -> dict[str, Any]:
        return prompter.answer(question.message, question.requested_schema)

    arguments = _arguments(args, tool.get("inputSchema", {}))
    result = client.call_tool(args.tool, arguments, answer)
    if result.error is not None:
        error = result.error
        print(f"error {error.code}: {error.message}", file=sys.stderr)
        if error.data is not None:
            print(json.dumps(error.data, indent=2), file=sys.stderr)
        return 1
    raw = result.raw or {}
    if "structuredContent" in raw:
        print(json.dumps(raw["structuredContent"], indent=2, ensure_ascii=False))
    else:
        print("\n".join(_block(c) for c in result.content))
    return 1 if result.is_error else 0


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
