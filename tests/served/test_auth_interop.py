"""The official MCP Python SDK client against a protected ``host serve``, tokens from a real issuer.

With a bearer token from the authorization server, the SDK lists and calls the help desk's tools in
both eras (the seed tutorial's whole scenario, questions included); without one it is refused with
the 401 challenge, whose metadata URL names the issuer.
"""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from collections.abc import Iterator

import anyio
import pytest
from mcp.client.client import Client
from mcp.client.streamable_http import create_mcp_http_client, streamable_http_client
from mcp.shared.exceptions import MCPError

from support.oauth import MockAuthServer
from support.sdk import LEGACY, MODERN, TOOLS, run_scenario
from support.servers import Server, host_serve

pytestmark = pytest.mark.served


@pytest.fixture(scope="module")
def protected(
    tmp_path_factory: pytest.TempPathFactory, oauth_server: MockAuthServer
) -> Iterator[Server]:
    tmp_path = tmp_path_factory.mktemp("protected")
    with host_serve(
        tmp_path,
        "host",
        "--workers",
        "2",
        HOST_AUTH_ISSUER=oauth_server.issuer,
        HOST_AUTH_AUDIENCE="http://127.0.0.1:{port}/mcp",
    ) as server:
        yield server


def authorized(server: Server, token: str | None):  # type: ignore[no-untyped-def]
    headers = {} if token is None else {"Authorization": f"Bearer {token}"}
    return streamable_http_client(
        f"{server.url}/mcp", http_client=create_mcp_http_client(headers=headers)
    )


@pytest.mark.parametrize("revision", [MODERN, *LEGACY])
def test_with_a_token_every_era_works(
    protected: Server,
    oauth_server: MockAuthServer,
    revision: str,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    token = oauth_server.token(sub="sam", audience=f"{protected.url}/mcp")
    run_scenario(authorized(protected, token), revision, monkeypatch)
    calls = [c for c in protected.calls() if c["tool"] == "close_ticket"]
    assert calls and all(c["principal"] == "sam" for c in calls)


def test_without_a_token_the_sdk_is_refused_with_the_challenge(
    protected: Server, oauth_server: MockAuthServer
) -> None:
    async def main() -> None:
        with anyio.fail_after(30):
            async with Client(authorized(protected, None), mode=MODERN) as client:
                await client.list_tools()

    before = len(protected.log_lines("auth_refused"))
    with pytest.raises(ExceptionGroup) as caught:
        anyio.run(main)
    assert caught.group_contains(MCPError)
    refusals = protected.wait_for("auth_refused", before + 1)[before:]
    assert refusals and all(r["kind"] == "missing" for r in refusals)
    request = urllib.request.Request(f"{protected.url}/mcp", data=b"{}", method="POST")
    with pytest.raises(urllib.error.HTTPError) as refused:
        urllib.request.urlopen(request, timeout=10)
    assert refused.value.code == 401
    metadata_url = f"{protected.url}/.well-known/oauth-protected-resource/mcp"
    assert refused.value.headers["WWW-Authenticate"] == f'Bearer resource_metadata="{metadata_url}"'
    with urllib.request.urlopen(metadata_url, timeout=10) as response:
        document = json.load(response)
    assert document["authorization_servers"] == [oauth_server.issuer]
    assert document["resource"] == f"{protected.url}/mcp"


def test_a_token_for_another_resource_is_refused(
    protected: Server, oauth_server: MockAuthServer
) -> None:
    token = oauth_server.token(audience="http://127.0.0.1:1/mcp")

    async def main() -> None:
        with anyio.fail_after(30):
            async with Client(authorized(protected, token), mode=MODERN) as client:
                assert {t.name for t in (await client.list_tools()).tools} == TOOLS

    before = len(protected.log_lines("auth_refused"))
    with pytest.raises(ExceptionGroup) as caught:
        anyio.run(main)
    assert caught.group_contains(MCPError)
    refusals = protected.wait_for("auth_refused", before + 1)[before:]
    assert refusals and refusals[0]["kind"] == "invalid_token"
