"""What one caller can make the approval requests hold, as a hostile caller tries it: 50
concurrent calls of one principal against a limit of 20, on two workers over one SQLite store,
leave at most 20 pending; 900 KB arguments are kept as digest, size and prefix.

(The store's own test runs the limit's race on Redis too: ``test_approve_store.py``.)
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
from support.inbox_http import Browser
from support.servers import Server, host_serve
from support.wire import send

pytestmark = pytest.mark.served

LIMIT = 20


@pytest.fixture(scope="module")
def limited(
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[tuple[Server, dict[str, str], Path]]:
    folder = tmp_path_factory.mktemp("approvals-limit")
    path, tokens = make_tokens(folder)
    with host_serve(
        folder, "host", "--workers", "2", specs=SPECS, HOST_AUTH_TOKENS=str(path),
        HOST_LIMIT_PENDING_APPROVALS=str(LIMIT), OPS_ACTS=str(folder / "acts.jsonl"),
    ) as server:  # fmt: skip
        yield server, tokens, folder / "host" / "store.db"


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
    limited: tuple[Server, dict[str, str], Path],
) -> None:
    server, tokens, store_file = limited
    token = tokens["alice"]
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


def _api(
    server: Server, token: str, method: str, path: str, body: object = None
) -> tuple[int, str]:
    conn = server.connect()
    headers = {"Authorization": f"Bearer {token}", "Content-Type": "application/json"}
    conn.request(method, path, None if body is None else json.dumps(body), headers)
    response = conn.getresponse()
    return response.status, response.read().decode()


def test_large_arguments_are_kept_cut_and_the_act_binds_to_all_of_them(
    limited: tuple[Server, dict[str, str], Path],
) -> None:
    server, tokens, store_file = limited
    big = unique("db") + "-" + "x" * 900_000
    other = big[:-1] + "y"  # the same first bytes, the same size: another call
    conn = server.connect()

    def whole_call(service: str) -> dict:
        asked = _round(conn, tokens["dave"], service)["result"]
        return _round(conn, tokens["dave"], service, inputResponses=SURE,
                      requestState=asked["requestState"])["result"]  # fmt: skip

    request_id = whole_call(big)["_meta"]["host/approval"]["request"]
    status, text = _api(server, tokens["bob"], "GET", f"/approvals/api/requests/{request_id}")
    assert status == 200 and len(text) < 20_000, (status, len(text))
    shown = json.loads(text)
    assert shown["cut"] == ["service"]
    kept = shown["arguments"]["service"]["bounded"]
    assert kept["bytes"] == len(big) + 2 and kept["prefix"].startswith(json.dumps(big[:40])[:-1])
    store = open_store(f"sqlite:///{store_file}")
    try:
        assert len(store.request(request_id).to_json()) < 20_000  # type: ignore[union-attr]
    finally:
        store.close()
    page = Browser(server, tokens["bob"]).request("GET", f"/approvals/requests/{request_id}")
    assert page[0] == 200 and len(page[2]) < 20_000
    assert "cut: 900.0 kB in all, kept as its SHA-256" in page[2]
    assert "(cut: " in page[2]  # the message that named the argument, too
    for who in ("bob", "carol"):
        path = f"/approvals/api/requests/{request_id}/approve"
        status, _ = _api(server, tokens[who], "POST", path, {"reason": "ok"})
        assert status == 200
    # The approval is bound to the full arguments: a call whose arguments differ only past the
    # kept prefix is another request, and only the approved call acts.
    other_request = whole_call(other)["_meta"]["host/approval"]["request"]
    assert other_request != request_id
    done = whole_call(big)
    assert not done.get("isError"), str(done)[:300]
    assert done["structuredContent"]["approved_by"] == ["bob", "carol"]
