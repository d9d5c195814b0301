"""Sessions abandoned without DELETE, as real clients leave them, never lock their principal out.

The official TypeScript SDK 1.x's ``client.close()`` sends no DELETE, so a script run on a
schedule leaves one session behind per run. With ``HOST_LIMIT_SESSIONS=3`` on a real
``host serve`` (two workers), five runs in a row all succeed: each one past the limit evicts the
principal's least recently used session, whose id then gets 404, while a session in use (its
place renewed) stays.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from host.auth.tokenfile import create_token
from support.legacy import NEWEST
from support.node import TS_PACKAGES, run_script
from support.servers import Server, host_serve
from support.wire import HEADERS, send

pytestmark = pytest.mark.served

#: Renewals are due every HOST_SESSION_TTL / 60 when that is under a minute: here every 2 s.
TTL_S = 120
RENEW_S = TTL_S / 60

#: One scheduled run: connect, list the outbox, close (no DELETE), print the session id.
TS_RUN = """
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";

const transport = new StreamableHTTPClientTransport(new URL(process.env.MCP_URL), {
  requestInit: { headers: { Authorization: `Bearer ${process.env.HOST_TOKEN}` } },
});
const client = new Client({ name: "cron-job", version: "1.0.0" });
await client.connect(transport);
const result = await client.callTool({ name: "list_outbox", arguments: {} });
if (result.isError) throw new Error(JSON.stringify(result));
const emails = result.structuredContent.emails;
console.log(JSON.stringify({ session: transport.sessionId, emails }));
await client.close();
"""


@dataclass
class Site:
    server: Server
    token: str


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Site]:
    folder = tmp_path_factory.mktemp("abandoned")
    token = create_token(folder / "tokens", "cron", [])[0]
    with host_serve(
        folder, "host", "--workers", "2", "--threads", "8", HOST_AUTH_TOKENS=str(folder / "tokens"),
        HOST_LIMIT_SESSIONS="3", HOST_SESSION_TTL=str(TTL_S),
    ) as server:  # fmt: skip
        yield Site(server, token)


def initialize(site: Site) -> str:
    """A legacy ``initialize`` on a new connection; the session id."""
    params = {"protocolVersion": NEWEST, "capabilities": {}, "clientInfo": {"name": "editor"}}
    body = {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": params}
    conn = site.server.connect()
    try:
        response = send(conn, body, Authorization=f"Bearer {site.token}")
        response.read()
        assert response.status == 200
        session: str = response.getheader("mcp-session-id") or ""
        return session
    finally:
        conn.close()


def ping(site: Site, session: str) -> int:
    """A ``ping`` of ``session`` on a new connection (either worker); its status."""
    conn = site.server.connect()
    headers = {**HEADERS, "Mcp-Session-Id": session, "Authorization": f"Bearer {site.token}"}
    try:
        conn.request("POST", "/mcp", json.dumps({"jsonrpc": "2.0", "id": 1, "method": "ping"}),
                     headers)  # fmt: skip
        response = conn.getresponse()
        response.read()
        return response.status
    finally:
        conn.close()


def test_scheduled_typescript_runs_that_never_delete_are_never_locked_out(
    site: Site, tmp_path: Path
) -> None:
    in_use = initialize(site)
    runs: list[str] = []
    for n in range(5):
        time.sleep(RENEW_S + 0.2)  # the editor's session is used between the runs
        assert ping(site, in_use) == 200
        folder = tmp_path / f"run{n}"
        folder.mkdir()
        done = run_script(folder, TS_PACKAGES, TS_RUN, HOST_TOKEN=site.token,
                          MCP_URL=f"{site.server.url}/mcp")  # fmt: skip
        assert done.returncode == 0, done.stderr
        printed = json.loads(done.stdout.strip().splitlines()[-1])
        assert isinstance(printed["emails"], list)
        runs.append(printed["session"])
    assert len(set(runs)) == 5
    # three places: the session in use and the two newest runs; the older runs' ids get 404
    assert [ping(site, s) for s in runs[:3] * 2] == [404] * 6
    assert [ping(site, s) for s in (in_use, *runs[3:])] == [200] * 3
