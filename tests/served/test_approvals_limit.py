"""The pending-requests limit as a hostile caller meets it: 50 concurrent calls of one principal
against a limit of 20, on two workers over one SQLite store, leave at most 20 pending.

(The store's own test runs the same race on Redis: ``test_approve_store.py``.)
"""

from __future__ import annotations

import http.client
import json
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from host.store import open_store
from support.approvals import SPECS, SURE, VERSION, make_tokens, unique
from support.servers import Server, host_serve
from support.wire import send

pytestmark = pytest.mark.served

LIMIT = 20


@pytest.fixture(scope="module")
def limited(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Server, str, Path]]:
    folder = tmp_path_factory.mktemp("approvals-limit")
    path, tokens = make_tokens(folder)
    with host_serve(
        folder, "host", "--workers", "2", specs=SPECS, HOST_AUTH_TOKENS=str(path),
        HOST_LIMIT_PENDING_APPROVALS=str(LIMIT), OPS_ACTS=str(folder / "acts.jsonl"),
    ) as server:  # fmt: skip
        yield server, tokens["alice"], folder / "host" / "store.db"


def _round(conn: http.client.HTTPConnection, token: str, service: str, **extra: object) -> dict:
    params = {
        "name": "delete_database",
        "arguments": {"service": service},
        **extra,
        "_meta": {
            "io.modelcontextprotocol/protocolVersion": VERSION,
            "io.modelcontextprotocol/clientCapabilities": {"elicitation": {"form": {}}},
        },
    }
    body = {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": params}
    headers = {"MCP-Protocol-Version": VERSION, "Mcp-Method": "tools/call",
               "Mcp-Name": "delete_database", "Authorization": f"Bearer {token}"}  # fmt: skip
    response = send(conn, body, **headers)
    payload: dict = json.loads(response.read())
    payload["status"] = response.status
    return payload


def test_fifty_concurrent_calls_leave_at_most_the_limit_pending(
    limited: tuple[Server, str, Path],
) -> None:
    server, token, store_file = limited
    services = [unique("db") for _ in range(50)]
    # The confirm's round first, so the fifty final rounds reach the approve step at once.
    states = []
    conn = server.connect()
    for service in services:
        asked = _round(conn, token, service)["result"]
        states.append(asked["requestState"])

    def final(index: int) -> dict:
        own = server.connect()
        try:
            return _round(own, token, services[index], inputResponses=SURE,
                          requestState=states[index])  # fmt: skip
        finally:
            own.close()

    with ThreadPoolExecutor(50) as pool:
        answers = list(pool.map(final, range(50)))

    pending = [a for a in answers if "result" in a and a["result"].get("isError")]
    refused = [a for a in answers if a["status"] == 429]
    assert len(pending) + len(refused) == 50, answers
    assert len(pending) == LIMIT, (len(pending), len(refused))
    assert {a["error"]["data"]["limit"] for a in refused} == {"pending_approvals"}
    store = open_store(f"sqlite:///{store_file}")
    try:
        kept = [r for r in store.requests() if r.arguments.get("service") in services]
    finally:
        store.close()
    assert len(kept) == LIMIT
