"""``host.web.wsgi:app``: configured from the environment, and served by a real gunicorn."""

from __future__ import annotations

import json
import subprocess
import sys
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from support import servers
from support.helpdesk import settings_env
from support.modern import VERSION
from support.servers import clean_env

pytestmark = pytest.mark.served

PROBE = """
import falcon.testing
from host.web.wsgi import app
ready = falcon.testing.TestClient(app).simulate_get("/readyz").json["status"]
print(isinstance(app, falcon.App), ready)
"""


def probe(tmp_path: Path, **extra: str) -> subprocess.CompletedProcess[str]:
    """Import ``host.web.wsgi:app`` in a fresh Python configured by ``extra``; ask it /readyz."""
    return subprocess.run(
        [sys.executable, "-c", PROBE],
        env=clean_env(**settings_env(tmp_path, **extra)),
        capture_output=True,
        text=True,
        timeout=60,
        cwd=tmp_path,
    )


def test_wsgi_without_a_secret_shares_the_generated_one_and_says_so(tmp_path: Path) -> None:
    done = probe(tmp_path)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["True", "ready"]
    warnings = [json.loads(line) for line in done.stderr.splitlines() if line.startswith("{")]
    (warning,) = [w for w in warnings if w.get("event") == "generated_secret"]
    assert warning["level"] == "warning"
    assert "HOST_SECRET" in warning["message"] and "every instance" in warning["message"]
    secret = (tmp_path / "data" / "secret").read_text().strip()
    assert len(secret) >= 32 and probe(tmp_path).returncode == 0
    assert (tmp_path / "data" / "secret").read_text().strip() == secret  # kept, not re-minted


def test_wsgi_reports_bad_settings_clearly(tmp_path: Path) -> None:
    done = probe(tmp_path, HOST_STATE_TTL="soon")
    assert done.returncode == 3
    assert "HOST_STATE_TTL must be a positive number of seconds, got 'soon'" in done.stderr
    assert "Traceback" not in done.stderr


def test_wsgi_reports_spec_problems_with_their_position(tmp_path: Path) -> None:
    specs = tmp_path / "specs"
    specs.mkdir()
    (specs / "bad.yaml").write_text("kind: tool\nname: broken\n")
    done = probe(tmp_path, HOST_SPECS=str(specs))
    assert done.returncode == 3
    assert "bad.yaml:" in done.stderr
    assert "host: not serving" in done.stderr
    assert "Traceback" not in done.stderr


@pytest.fixture
def gunicorn(tmp_path: Path) -> Iterator[str]:
    """``gunicorn host.web.wsgi:app`` on the help desk, two workers sharing a secret; its URL."""
    env = settings_env(tmp_path, HOST_SECRET="shared-by-every-worker-0123456789abcdef0123456789")
    with servers.gunicorn(
        tmp_path, "gunicorn", "--workers", "2", "--timeout", "30", **env
    ) as server:
        yield server.url


def _call(url: str, name: str, params: dict[str, Any]) -> dict[str, Any]:
    params = {
        "name": name,
        **params,
        "_meta": {
            "io.modelcontextprotocol/protocolVersion": VERSION,
            "io.modelcontextprotocol/clientCapabilities": {"elicitation": {}},
        },
    }
    body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": params})
    request = urllib.request.Request(
        url + "/mcp",
        data=body.encode(),
        headers={
            "Content-Type": "application/json",
            "Accept": "application/json, text/event-stream",
            "MCP-Protocol-Version": VERSION,
            "Mcp-Method": "tools/call",
            "Mcp-Name": name,
            # NOTE: a fresh connection per request, so rounds spread over the workers.
            "Connection": "close",
        },
    )
    with urllib.request.urlopen(request, timeout=10) as response:
        result: dict[str, Any] = json.loads(response.read())["result"]
    return result


def test_rounds_of_one_call_may_land_on_different_workers(gunicorn: str) -> None:
    for ticket in ("T-1", "T-2", "T-3", "T-4"):
        first = _call(gunicorn, "close_ticket", {"arguments": {"id": ticket}})
        assert first["resultType"] == "input_required"
        (key,) = first["inputRequests"]
        final = {
            "arguments": {"id": ticket},
            "inputResponses": {key: {"action": "accept", "content": {"confirm": True}}},
            "requestState": first["requestState"],
        }
        results = [_call(gunicorn, "close_ticket", final) for _ in range(3)]
        assert all(r["structuredContent"] == {"id": ticket, "closed": True} for r in results)
    outbox = _call(gunicorn, "list_outbox", {"arguments": {}})["structuredContent"]["emails"]
    assert len(outbox) == 4


def test_the_official_sdk_client_can_use_the_tools(gunicorn: str) -> None:
    import anyio
    import mcp_types
    from mcp.client.client import Client
    from mcp.shared.exceptions import MCPError

    questions: list[str] = []

    async def confirm(context: Any, params: Any) -> mcp_types.ElicitResult:
        questions.append(params.message)
        return mcp_types.ElicitResult(action="accept", content={"confirm": True})

    async def decline(context: Any, params: Any) -> mcp_types.ElicitResult:
        return mcp_types.ElicitResult(action="decline")

    async def scenario() -> None:
        with anyio.fail_after(60):
            await steps()

    async def steps() -> None:
        url = gunicorn + "/mcp"
        async with Client(url, mode="auto", elicitation_callback=confirm) as client:
            listed = await client.list_tools()
            assert [t.name for t in listed.tools] == sorted(t.name for t in listed.tools)
            closed = await client.call_tool("close_ticket", {"id": "T-1"})
            assert closed.structured_content == {"id": "T-1", "closed": True}
            assert questions and "T-1" in questions[0]
        async with Client(url, mode="auto", elicitation_callback=decline) as client:
            kept = await client.call_tool("close_ticket", {"id": "T-2"})
            assert kept.structured_content is not None
            assert kept.structured_content["closed"] is False
        async with Client(url, mode="auto") as client:
            with pytest.raises(MCPError) as info:
                await client.call_tool("close_ticket", {"id": "T-3"})
            assert info.value.error.code == -32021
            emails = await client.call_tool("list_outbox", {})
            assert emails.structured_content == {
                "emails": ['To the customer of T-1: "Cannot log in" is resolved.']
            }

    anyio.run(scenario)


def test_the_protocol_sees_the_headers_falcon_sees() -> None:
    import falcon
    from falcon import testing as falcon_testing

    from host.web.app import EnvironHeaders

    sent = {"Mcp-Method": "tools/call", "Content-Type": "application/json", "Mcp-Param-Id": "T-1"}
    env = falcon_testing.create_environ(headers=sent, body=b"{}")
    headers = EnvironHeaders(env)

    assert dict(headers) == {k.lower(): v for k, v in falcon.Request(env).headers.items()}
    assert headers.get("mcp-param-id") == "T-1" and headers.get("content-length") == "2"
    assert headers.get("mcp-name") is None and "mcp-method" in headers
