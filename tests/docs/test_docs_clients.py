"""docs/connecting-clients.md's examples run as written, against a real ``host serve`` with a token.

The token comes from the page's own set-up commands; the Python SDK script and the TypeScript SDK
script are the page's blocks, run with this environment's Python and the Node.js 22 that
``tests/clients/ts/install`` puts in ``.cache/`` (``.ci/run`` runs it), and print what the page
shows. The desktop client's JSON entries are read for what a client reads from them (the URL and
the header, or the command that launches ``host stdio``) and connected to with the Python SDK.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client
from mcp.client.stdio import StdioServerParameters
from mcp.client.streamable_http import create_mcp_http_client, streamable_http_client
from mcp.types import ElicitResult

from support.node import NODE, TS_PACKAGES
from support.paths import ROOT
from support.servers import Server, clean_env, host_serve

pytestmark = pytest.mark.served

PAGE = (ROOT / "docs" / "connecting-clients.md").read_text()
HOST = Path(sys.executable).parent / "host"
TOOLS = [
    "assign_ticket",
    "close_ticket",
    "delete_ticket",
    "list_outbox",
    "rollback_deploy",
    "service_status",
]


def block(language: str, containing: str) -> str:
    """The one fenced block of the page in ``language`` that contains ``containing``."""
    found = [b for b in re.findall(rf"```{language}\n(.*?)```", PAGE, re.S) if containing in b]
    assert len(found) == 1, f"{len(found)} {language} blocks with {containing!r}"
    return found[0]


def shown(command: str) -> list[str]:
    """The lines the page shows after ``$ COMMAND``, up to the next prompt or the block's end."""
    after = PAGE.split(f"\n$ {command}\n", 1)[1]
    return re.split(r"\n(?:\$ |```)", after, maxsplit=1)[0].splitlines()


@pytest.fixture(scope="module")
def protected(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Server, str]]:
    """The help desk served with the tokens file the page's set-up makes, and its token."""
    tmp_path = tmp_path_factory.mktemp("clients")
    setup = block("sh", "host token create").splitlines()
    assert setup[-1] == ".venv/bin/host serve"
    script = "\n".join([*setup[:-1], 'echo "$HOST_AUTH_TOKENS $HOST_TOKEN"'])
    made = subprocess.run(
        ["bash", "-euc", script.replace(".venv/bin/host", str(HOST))],
        capture_output=True, text=True, timeout=60, cwd=tmp_path, env=clean_env(),
    )  # fmt: skip
    assert made.returncode == 0, made.stderr
    tokens, token = made.stdout.split()
    with host_serve(tmp_path, "desk", HOST_AUTH_TOKENS=tokens) as server:
        yield server, token


def run_with(
    server: Server, argv: list[str], token: str, cwd: Path
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        argv, capture_output=True, text=True, timeout=120, cwd=cwd,
        env=clean_env(HOST_TOKEN=token),
    )  # fmt: skip


def test_the_python_sdk_script_prints_what_the_page_shows(
    protected: tuple[Server, str], tmp_path: Path
) -> None:
    server, token = protected
    script = tmp_path / "close_ticket.py"
    code = block("python", "streamable_http_client")
    script.write_text(code.replace("127.0.0.1:8000", f"127.0.0.1:{server.port}"))
    for mode in ["", "legacy"]:
        argv = [sys.executable, str(script), *([mode] if mode else [])]
        done = run_with(server, argv, token, tmp_path)
        assert done.returncode == 0, done.stderr
        assert done.stdout.splitlines() == shown(f"python close_ticket.py {mode}".strip())
        assert 'Close T-1 ("Cannot log in")' in done.stderr
    refused = run_with(server, [sys.executable, str(script)], "not-a-token", tmp_path)
    assert refused.returncode != 0
    assert any(line["event"] == "auth_refused" for line in server.log_lines("auth_refused"))


def test_the_typescript_sdk_script_prints_what_the_page_shows(
    protected: tuple[Server, str], tmp_path: Path
) -> None:
    if not NODE.exists() or not (TS_PACKAGES / "@modelcontextprotocol" / "sdk").is_dir():
        pytest.fail(
            "the TypeScript client example needs Node.js 22 and @modelcontextprotocol/sdk: run "
            "tests/clients/ts/install (as .ci/run does), or set HOST_TEST_NODE",
            pytrace=False,
        )
    server, token = protected
    (tmp_path / "node_modules").symlink_to(TS_PACKAGES)
    script = tmp_path / "close_ticket.mjs"
    code = block("js", "StreamableHTTPClientTransport")
    script.write_text(code.replace("127.0.0.1:8000", f"127.0.0.1:{server.port}"))
    done = run_with(server, [str(NODE), str(script)], token, tmp_path)
    assert done.returncode == 0, done.stderr
    expected = shown("npm install @modelcontextprotocol/sdk && node close_ticket.mjs")
    assert done.stdout.splitlines() == expected
    assert 'Close T-2 ("Invoice total is wrong")' in done.stderr


async def confirm(context: Any, params: Any) -> ElicitResult:
    return ElicitResult(action="accept", content={"confirm": True})


def close_through(client_of: Any) -> tuple[list[str], Any]:
    """Through the client ``client_of()`` makes: the tools, then close_ticket T-3's result."""

    async def main() -> tuple[list[str], Any]:
        with anyio.fail_after(60):
            async with client_of() as client:
                names = sorted(tool.name for tool in (await client.list_tools()).tools)
                result = await client.call_tool("close_ticket", {"id": "T-3"})
                return names, result.structured_content

    return anyio.run(main)


def test_the_desktop_entry_over_http_connects(protected: tuple[Server, str]) -> None:
    server, token = protected
    (entry,) = json.loads(block("json", '"type": "http"'))["mcpServers"].values()
    assert entry["type"] == "http"
    url = entry["url"].replace("127.0.0.1:8000", f"127.0.0.1:{server.port}")
    headers = {k: v.replace("YOUR_TOKEN", token) for k, v in entry["headers"].items()}

    def client() -> Client:
        http = create_mcp_http_client(headers=headers)
        return Client(streamable_http_client(url, http_client=http), elicitation_callback=confirm)

    assert close_through(client) == (TOOLS, {"id": "T-3", "closed": True})


def test_the_desktop_entry_over_stdio_launches_the_host(tmp_path: Path) -> None:
    (entry,) = json.loads(block("json", '"command": "host"'))["mcpServers"].values()
    args = [arg.replace("/srv/help-desk", str(ROOT)) for arg in entry["args"]]
    env = {k: v.replace("/srv/help-desk", str(tmp_path)) for k, v in entry["env"].items()}
    params = StdioServerParameters(command=str(HOST), args=args, env=clean_env(**env))

    def client() -> Client:
        return Client(params, elicitation_callback=confirm)

    assert close_through(client) == (TOOLS, {"id": "T-3", "closed": True})
    assert (tmp_path / ".host").is_dir()
