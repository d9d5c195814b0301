"""Official SDK clients through a call that waits for another person's approval.

The Python SDK (2026-07-28 and the legacy handshake) and the TypeScript SDK (its 1.x line on
the legacy handshake, its 2.x client pinned to 2026-07-28) each call ``restart_service``: they
tick the caller's confirm, the call waits, ``bob`` approves through the API, and the same call
completes with the act's result.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client
from mcp.client.streamable_http import create_mcp_http_client, streamable_http_client
from mcp.types import ElicitResult

from support.approvals import SPECS, Site, make_tokens, unique
from support.node import TS_PACKAGES, TS_V2_PACKAGES, run_script
from support.servers import host_serve

pytestmark = pytest.mark.served


#: The v2 client, pinned to 2026-07-28 (or on the legacy handshake with MCP_MODE=legacy).
TS_V2_SCRIPT = """
import { Client, StreamableHTTPClientTransport } from "@modelcontextprotocol/client";

const transport = new StreamableHTTPClientTransport(new URL(process.env.MCP_URL), {
  requestInit: { headers: { Authorization: `Bearer ${process.env.HOST_TOKEN}` } },
});
const client = new Client(
  { name: "approve-test", version: "1.0.0" },
  {
    capabilities: { elicitation: { form: {} } },
    versionNegotiation: { mode: { pin: "2026-07-28" } },
  },
);
client.setRequestHandler("elicitation/create", async () => ({
  action: "accept", content: { confirm: true },
}));
await client.connect(transport);
const result = await client.callTool(
  { name: "restart_service", arguments: { service: process.env.SERVICE } },
  { timeout: 60000 },
);
console.log(client.getNegotiatedProtocolVersion());
console.log(JSON.stringify(result.structuredContent));
await client.close();
"""

TS_SCRIPT = """
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { ElicitRequestSchema } from "@modelcontextprotocol/sdk/types.js";

const transport = new StreamableHTTPClientTransport(new URL(process.env.MCP_URL), {
  requestInit: { headers: { Authorization: `Bearer ${process.env.HOST_TOKEN}` } },
});
const client = new Client(
  { name: "approve-test", version: "1.0.0" },
  { capabilities: { elicitation: { form: {} } } },
);
client.setRequestHandler(ElicitRequestSchema, async () => ({
  action: "accept", content: { confirm: true },
}));
await client.connect(transport);
const result = await client.callTool(
  { name: "restart_service", arguments: { service: process.env.SERVICE } },
  undefined,
  { timeout: 60000, resetTimeoutOnProgress: true },
);
console.log(JSON.stringify(result.structuredContent));
await client.close();
"""


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Site]:
    folder = tmp_path_factory.mktemp("approve-clients")
    path, tokens = make_tokens(folder)
    with host_serve(
        folder, "host", "--workers", "2", "--threads", "8", specs=SPECS,
        HOST_AUTH_TOKENS=str(path), OPS_ACTS=str(folder / "acts.jsonl"),
    ) as server:  # fmt: skip
        yield Site([server], tokens, folder / "acts.jsonl")


def approve_when_asked(site: Site, service: str) -> threading.Thread:
    """Bob approves the request for ``service`` as soon as it is pending (in a thread)."""

    def approve() -> None:
        request = site.wait_pending("bob", service)
        site.api("bob", "POST", f"/{request['id']}/approve", {"reason": "ok"})

    thread = threading.Thread(target=approve, daemon=True)
    thread.start()
    return thread


async def _confirm(context: Any, params: Any) -> ElicitResult:
    return ElicitResult(action="accept", content={"confirm": True})


@pytest.mark.parametrize("mode", ["2026-07-28", "legacy"])
def test_the_python_sdk_waits_then_completes(site: Site, mode: str) -> None:
    service = unique(f"py-{mode}")
    approver = approve_when_asked(site, service)
    url = f"{site.servers[0].url}/mcp"

    async def main() -> Any:
        headers = {"Authorization": f"Bearer {site.tokens['alice']}"}
        client = create_mcp_http_client(headers=headers)
        transport = streamable_http_client(url, http_client=client)
        with anyio.fail_after(60):
            async with Client(transport, mode=mode, elicitation_callback=_confirm) as session:
                result = await session.call_tool("restart_service", {"service": service})
                return result.structured_content

    started = time.monotonic()
    assert anyio.run(main) == {"restarted": service, "approved_by": ["bob"]}
    approver.join(10)
    assert time.monotonic() - started < 30
    assert len(site.acted(service)) == 1


@pytest.mark.parametrize(
    ("packages", "code", "revision"),
    [(TS_PACKAGES, TS_SCRIPT, "2025-11-25"), (TS_V2_PACKAGES, TS_V2_SCRIPT, "2026-07-28")],
    ids=["sdk-1.x-legacy", "client-2.x-2026-07-28"],
)
def test_the_typescript_sdk_waits_then_completes(
    site: Site, tmp_path: Path, packages: Path, code: str, revision: str
) -> None:
    service = unique("ts")
    approver = approve_when_asked(site, service)
    done = run_script(tmp_path, packages, code, HOST_TOKEN=site.tokens["alice"],
                      MCP_URL=f"{site.servers[0].url}/mcp", SERVICE=service)  # fmt: skip
    approver.join(10)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.strip().splitlines()
    assert revision == "2025-11-25" or lines[0] == revision
    assert json.loads(lines[-1]) == {
        "restarted": service,
        "approved_by": ["bob"],
    }
    assert len(site.acted(service)) == 1
