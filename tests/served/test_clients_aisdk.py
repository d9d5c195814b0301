"""The AI SDK's MCP client (``@ai-sdk/mcp``, Node.js), as agent developers use it, on the help desk.

Over HTTP (one ``host serve`` for the module) and over stdio (``host stdio`` launched by the
client, its settings in ``env``), with its default protocol discovery (``server/discover``:
2026-07-28) and without it (``initialize``: 2025-11-25). Each lists the tools (every
``inputSchema`` with ``properties``), closes a ticket through its question with one email sent, and
leaves another open when the user declines. One Node.js process runs both modes of a transport.
Over stdio the client waits 1 s for ``server/discover`` unless its transport says it waits longer
(``waitsForProtocolVersionDiscovery``); the test's says so, since ``host stdio`` on a loaded
machine takes longer than that to start.
docs/connecting-clients.md's matrix records what these show.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from support.node import AI_SDK_PACKAGES, run_script
from support.paths import ROOT
from support.sdk import SAID_NO, TOOLS
from support.servers import Server, host_serve

pytestmark = pytest.mark.served

SCRIPT = """
import { createMCPClient, ElicitationRequestSchema } from "@ai-sdk/mcp";
import { StdioMCPTransport } from "@ai-sdk/mcp/mcp-stdio";

const target = JSON.parse(process.env.TARGET);
const data = (r) => r.structuredContent ?? JSON.parse(r.content[0].text);

async function scenario(discovery) {
  const transport = target.url
    ? { type: "http", url: target.url }
    : new StdioMCPTransport(target);
  // Over stdio the client gives server/discover 1 s, then speaks initialize instead: a host
  // slower than that to start (a loaded machine) would be spoken to at 2025-11-25.
  if (!target.url) transport.waitsForProtocolVersionDiscovery = true;
  const client = await createMCPClient({
    transport, protocolVersionDiscovery: discovery, capabilities: { elicitation: {} },
  });
  const plan = [];
  const shown = [];
  client.onElicitationRequest(ElicitationRequestSchema, async (request) => {
    shown.push(request.params.message);
    return plan.shift();
  });
  const emails = async (id) =>
    data(await client.callTool({ name: "list_outbox", arguments: {} }))
      .emails.filter((e) => e.includes(id)).length;
  const listed = (await client.listTools()).tools;
  const before = await emails("T-1");
  plan.push({ action: "decline" });
  const declined = data(await client.callTool({ name: "close_ticket", arguments: { id: "T-2" } }));
  plan.push({ action: "accept", content: { confirm: true } });
  const closed = data(await client.callTool({ name: "close_ticket", arguments: { id: "T-1" } }));
  const out = {
    version: client.initializeResult.protocolVersion ?? transport.protocolVersion,
    tools: listed.map((t) => t.name).sort(),
    withProperties: listed.every((t) => "properties" in t.inputSchema),
    declined, closed, shown, left: plan.length,
    sent: (await emails("T-1")) - before, sentT2: await emails("T-2"),
  };
  await client.close();
  return out;
}

const results = {};
results.discover = await scenario(true);
results.initialize = await scenario(false);
console.log(JSON.stringify(results));
"""

#: The revision each way of connecting negotiates with the host.
MODES = {"discover": "2026-07-28", "initialize": "2025-11-25"}


@pytest.fixture(scope="module")
def http(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    with host_serve(tmp_path_factory.mktemp("ai-sdk"), "host") as server:
        yield server


def run(tmp_path: Path, target: dict[str, Any]) -> None:
    done = run_script(tmp_path, AI_SDK_PACKAGES, SCRIPT, TARGET=json.dumps(target))
    assert done.returncode == 0, done.stderr
    results = json.loads(done.stdout.strip().splitlines()[-1])
    assert set(results) == set(MODES)
    for mode, result in results.items():
        assert result["version"] == MODES[mode], mode
        assert set(result["tools"]) == TOOLS
        assert result["withProperties"] is True
        assert result["declined"] == {"id": "T-2", "closed": False, "reason": SAID_NO}
        assert result["closed"] == {"id": "T-1", "closed": True}
        assert result["shown"][-1].startswith('Close T-1 ("Cannot log in")')
        assert (result["left"], result["sent"], result["sentT2"]) == (0, 1, 0), mode


def test_over_http(http: Server, tmp_path: Path) -> None:
    run(tmp_path, {"url": f"{http.url}/mcp"})


def test_over_stdio(tmp_path: Path) -> None:
    env = {"HOST_DATA_DIR": str(tmp_path / "data"), "HELPDESK_DB": str(tmp_path / "helpdesk.db")}
    stdio = {
        "command": sys.executable,
        "args": ["-m", "host", "stdio", "--specs", str(ROOT / "specs")],
    }
    run(tmp_path, {**stdio, "env": env, "cwd": str(tmp_path)})
