"""SEP-2243 custom headers: an ``x-mcp-header`` argument must arrive as a matching ``Mcp-Param-*``.

End to end through the real WSGI app: a 2026-07-28 ``tools/call`` whose header is missing, extra,
badly encoded or different from its argument is HTTP 400 with -32020, before the tool runs; the
validator's side (rule ``mcp-header``) is in ``tests/fixtures/broken/mcp-header.yaml``.
"""

from __future__ import annotations

import base64
import json
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import anyio
import falcon.testing
import pytest
from mcp.client.client import Client

from host.machine import compile_project
from host.protocol import RequestContext, make_endpoint
from host.protocol.header_values import decode_header_value
from host.protocol.modern.headers import param_headers
from host.spec import load_project
from host.spec.check import check_project
from host.spec.model import Project
from host.spec.param_headers import find_annotations
from host.store import open_store
from support.helpdesk import write_project
from support.legacy import Legacy
from support.modern import Mcp, make_client
from support.paths import ROOT
from support.servers import host_serve

pytestmark = pytest.mark.served

SERVER = """\
kind: server
name: routed
"""

TOOLS = """\
kind: tool
name: query
description: Run a query in a region; the region, limit and dry-run flag are mirrored in headers.
annotations: {readOnlyHint: true}
input:
  properties:
    region: {type: string, x-mcp-header: Region}
    limit: {type: integer, x-mcp-header: Limit}
    dry: {type: boolean, x-mcp-header: Dry-Run}
    where:
      type: object
      properties:
        city: {type: string, x-mcp-header: City}
    sql: {type: string}
  required: [region]
steps:
  - act: work:query
---
kind: tool
name: plain
description: No headers at all.
annotations: {readOnlyHint: true}
steps:
  - act: work:plain
"""

HANDLERS = """\
import os
from pathlib import Path


def query(region, limit=None, dry=None, where=None, sql=None):
    ran = Path(os.environ["HOST_DATA_DIR"]) / "ran.txt"
    with ran.open("a") as out:
        out.write(region + "\\n")
    return {"region": region, "limit": limit, "dry": dry, "where": where}


def plain():
    return "plain"
"""


def routed_project(tmp_path: Path) -> Project:
    return load_project(*write_project(tmp_path, SERVER, TOOLS, HANDLERS))


@pytest.fixture
def mcp(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Mcp:
    monkeypatch.setenv("HOST_DATA_DIR", str(tmp_path / "data"))
    return make_client(tmp_path, routed_project(tmp_path))


def ran(tmp_path: Path) -> list[str]:
    path = tmp_path / "data" / "ran.txt"
    return path.read_text().splitlines() if path.exists() else []


def call(mcp: Mcp, arguments: Mapping[str, Any], **params: str) -> falcon.testing.Result:
    headers = mcp.headers("tools/call", "query")
    headers.update(params)
    return mcp.request(
        "tools/call", {"name": "query", "arguments": dict(arguments)}, headers=headers
    )


def b64(text: str) -> str:
    return "=?base64?" + base64.b64encode(text.encode("utf-8")).decode("ascii") + "?="


def assert_mismatch(response: falcon.testing.Result, header: str, words: str) -> None:
    assert response.status_code == 400, response.text
    error = response.json["error"]
    assert error["code"] == -32020
    assert error["message"].startswith(f"Header mismatch: {header} "), error["message"]
    assert words in error["message"]
    assert error["data"] == {"header": header}
    assert response.json["id"] is not None


# --- the parts ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("sent", "decoded"),
    [
        ("us-west1", "us-west1"),
        ("  us-west1 \t", "us-west1"),
        ("with inner space", "with inner space"),
        ("=?base64?SGVsbG8=?=", "Hello"),
        ("=?base64?SGVsbG8sIOS4lueVjA==?=", "Hello, 世界"),
        ("=?base64?IHBhZGRlZCA=?=", " padded "),
        ("=?base64?PT9iYXNlNjQ/bGl0ZXJhbD89?=", "=?base64?literal?="),
        ("=?base64?SGVsbG8=", "=?base64?SGVsbG8="),  # no ?= suffix: a literal
        ("SGVsbG8=", "SGVsbG8="),  # no prefix: a literal
        ("=?base64??=", ""),
        ("=?base64?SGVsbG8?=", None),  # padding missing
        ("=?base64?SGVs!!!bG8=?=", None),  # outside the alphabet
        ("=?base64?SGVsbG9=?=", None),  # non-canonical last character
        ("=?base64?/w==?=", None),  # not UTF-8
        ("caf\xe9", None),  # not a character a header value may hold
        ("line\x01", None),
        (None, None),
    ],
)
def test_decoding_header_values(sent: str | None, decoded: str | None) -> None:
    assert decode_header_value(sent) == decoded


def test_only_valid_annotations_on_plain_property_chains_become_headers() -> None:
    schema = {
        "type": "object",
        "x-mcp-header": "Root",
        "properties": {
            "a": {"type": "string", "x-mcp-header": "A"},
            "b": {"type": "object", "properties": {"c": {"type": "integer", "x-mcp-header": "C"}}},
            "d": {"type": "number", "x-mcp-header": "D"},
            "e": {"type": "array", "items": {"type": "string", "x-mcp-header": "E"}},
            "f": {"type": "string", "x-mcp-header": "a"},
            "g": {"anyOf": [{"type": "string", "x-mcp-header": "G"}]},
            "h": {"type": "boolean", "x-mcp-header": "Bad Name"},
        },
        "$defs": {"x": {"type": "string", "x-mcp-header": "X"}},
    }
    found = find_annotations(schema)
    assert [(a.name, a.problem is None) for a in found] == [
        ("Root", False), ("A", True), ("C", True), ("D", False), ("E", False), ("a", False),
        ("G", False), ("Bad Name", False), ("X", False),
    ]  # fmt: skip
    assert [(p.header, p.path, p.type) for p in param_headers(schema)] == [
        ("Mcp-Param-A", ("a",), "string"),
        ("Mcp-Param-C", ("b", "c"), "integer"),
    ]


def test_the_validator_accepts_valid_annotations(tmp_path: Path) -> None:
    routed_project(tmp_path)
    result = check_project([tmp_path / "specs"], tmp_path / "handlers")
    assert result.diagnostics == []


def test_the_conformance_specs_are_valid() -> None:
    root = ROOT / "conformance"
    result = check_project([root / "specs"], root / "handlers")
    assert result.errors == []


# --- 2026-07-28 over HTTP ---------------------------------------------------------------------


def test_tools_list_keeps_the_annotations(mcp: Mcp) -> None:
    tools = mcp.result(mcp.request("tools/list"))["tools"]
    (query,) = [tool for tool in tools if tool["name"] == "query"]
    properties = query["inputSchema"]["properties"]
    assert properties["region"]["x-mcp-header"] == "Region"
    assert properties["where"]["properties"]["city"]["x-mcp-header"] == "City"


def test_matching_headers_let_the_call_run(mcp: Mcp, tmp_path: Path) -> None:
    arguments = {"region": "us-west1", "limit": 42, "dry": False, "where": {"city": "Zürich"}}
    response = call(
        mcp,
        arguments,
        **{
            "Mcp-Param-Region": "us-west1",
            "mcp-param-limit": "42.0",
            "MCP-PARAM-DRY-RUN": "false",
            "Mcp-Param-City": b64("Zürich"),
        },
    )
    result = mcp.result(response)
    assert result["structuredContent"]["where"] == {"city": "Zürich"}
    assert ran(tmp_path) == ["us-west1"]


@pytest.mark.parametrize(
    ("arguments", "headers", "header", "words"),
    [
        ({"region": "eu"}, {}, "Mcp-Param-Region", "is missing; it must repeat arguments.region"),
        ({"region": "eu"}, {"Mcp-Param-Region": "us"}, "Mcp-Param-Region", "does not match"),
        ({"region": "eu"}, {"Mcp-Param-Region": "EU"}, "Mcp-Param-Region", "does not match"),
        ({"region": "eu"}, {"Mcp-Param-Region": "=?base64?ZXU?="},
         "Mcp-Param-Region", "is not a valid header value"),
        ({"region": " eu"}, {"Mcp-Param-Region": " eu"}, "Mcp-Param-Region", "does not match"),
        ({"region": "eu", "limit": 5}, {"Mcp-Param-Region": "eu", "Mcp-Param-Limit": "6"},
         "Mcp-Param-Limit", "does not match arguments.limit"),
        ({"region": "eu", "limit": 5}, {"Mcp-Param-Region": "eu", "Mcp-Param-Limit": "5e0"},
         "Mcp-Param-Limit", "does not match"),
        ({"region": "eu", "dry": True}, {"Mcp-Param-Region": "eu", "Mcp-Param-Dry-Run": "True"},
         "Mcp-Param-Dry-Run", "does not match"),
        ({"region": "eu"}, {"Mcp-Param-Region": "eu", "Mcp-Param-Limit": "5"},
         "Mcp-Param-Limit", "is sent but arguments.limit has no value"),
        ({"region": "eu", "where": {"city": "Oslo"}}, {"Mcp-Param-Region": "eu"},
         "Mcp-Param-City", "must repeat arguments.where.city"),
    ],
)  # fmt: skip
def test_a_header_that_disagrees_is_400_and_nothing_runs(
    mcp: Mcp,
    tmp_path: Path,
    arguments: dict[str, Any],
    headers: dict[str, str],
    header: str,
    words: str,
) -> None:
    assert_mismatch(call(mcp, arguments, **headers), header, words)
    assert ran(tmp_path) == []


def test_an_argument_without_a_value_needs_no_header(mcp: Mcp, tmp_path: Path) -> None:
    arguments: dict[str, Any] = {"region": "eu", "limit": None, "where": {}}
    result = mcp.result(call(mcp, arguments, **{"Mcp-Param-Region": "eu"}))
    # The arguments' own check then says what is wrong with a null limit.
    assert result["isError"] is True and "limit" in result["content"][0]["text"]
    assert mcp.result(call(mcp, {"region": "eu"}, **{"Mcp-Param-Region": "eu"}))["content"]


def test_headers_are_checked_before_the_arguments(mcp: Mcp) -> None:
    # A wrong type in the body with no header: the missing header is the first problem.
    assert_mismatch(call(mcp, {"region": 7}), "Mcp-Param-Region", "is missing")


def test_the_conformance_suites_cases(mcp: Mcp, tmp_path: Path) -> None:
    hello = base64.b64encode(b"Hello").decode()
    accepted = [("Hello", f"=?base64?{hello}?="), (hello, hello), (f"=?base64?{hello}",) * 2]
    for value, sent in accepted:
        mcp.result(call(mcp, {"region": value}, **{"Mcp-Param-Region": sent}))
    for sent in ("=?base64?SGVsbG8?=", "=?base64?SGVs!!!bG8=?="):
        assert call(mcp, {"region": "Hello"}, **{"Mcp-Param-Region": sent}).status_code == 400
    assert call(mcp, {"region": "test-value"}).status_code == 400
    assert ran(tmp_path) == ["Hello", hello, f"=?base64?{hello}"]


def test_tools_without_annotations_ignore_param_headers(mcp: Mcp) -> None:
    headers = {**mcp.headers("tools/call", "plain"), "Mcp-Param-Region": "anything"}
    response = mcp.request("tools/call", {"name": "plain"}, headers=headers)
    assert mcp.result(response)["content"] == [{"type": "text", "text": "plain"}]


def test_every_round_of_a_call_is_checked(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    specs = tmp_path / "specs"
    routed_project(tmp_path)
    (specs / "server.yaml").write_text(SERVER + "elicitation: {enabled: true}\n")
    (specs / "tools.yaml").write_text(
        TOOLS.replace(
            "  - act: work:query", "  - confirm: go\n    message: Run it?\n  - act: work:query"
        )
    )
    project = load_project(specs, tmp_path / "handlers")
    monkeypatch.setenv("HOST_DATA_DIR", str(tmp_path / "data"))
    mcp = make_client(tmp_path, project)
    first = mcp.result(call(mcp, {"region": "eu"}, **{"Mcp-Param-Region": "eu"}))
    assert first["resultType"] == "input_required"
    answer = {"go": {"action": "accept", "content": {"confirm": True}}}
    params = {"name": "query", "arguments": {"region": "eu"}, "inputResponses": answer,
              "requestState": first["requestState"]}  # fmt: skip
    missing = mcp.request("tools/call", params, headers=mcp.headers("tools/call", "query"))
    assert_mismatch(missing, "Mcp-Param-Region", "is missing")
    headers = {**mcp.headers("tools/call", "query"), "Mcp-Param-Region": "eu"}
    done = mcp.result(mcp.request("tools/call", params, headers=headers))
    assert done["structuredContent"]["region"] == "eu"
    assert ran(tmp_path) == ["eu"]


# --- where headers do not exist ----------------------------------------------------------------


def test_legacy_sessions_have_no_param_headers(mcp: Mcp) -> None:
    legacy = Legacy(mcp.http)
    legacy.initialize("2025-11-25", {})
    result = legacy.call("query", {"region": "eu"})
    assert result["structuredContent"]["region"] == "eu"


def test_transports_without_headers_check_none(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HOST_DATA_DIR", str(tmp_path / "data"))
    project = routed_project(tmp_path)
    (tmp_path / "data").mkdir()
    endpoint = make_endpoint(
        project.server,
        compile_project(project),
        open_store(f"sqlite:///{tmp_path / 'store.db'}"),
        keys=("k",),
        state_ttl_s=60,
        data_dir=tmp_path / "data",
    )
    meta = Mcp(falcon.testing.TestClient(falcon.App())).meta()
    body = {"jsonrpc": "2.0", "id": 1, "method": "tools/call",
            "params": {"name": "query", "arguments": {"region": "eu"}, "_meta": meta}}  # fmt: skip
    reply = endpoint.handle(json.dumps(body).encode(), RequestContext())
    assert reply.body is not None and reply.body["result"]["structuredContent"]["region"] == "eu"


# --- the official SDK client, against a real server ----------------------------------------------


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """``host serve`` of the routed project, one worker, on 127.0.0.1; its ``/mcp`` URL."""
    tmp_path = tmp_path_factory.mktemp("headers-serve")
    routed_project(tmp_path)
    with host_serve(
        tmp_path, "serve", "--workers", "1",
        specs=tmp_path / "specs", handlers=tmp_path / "handlers",
        HOST_DATA_DIR=str(tmp_path / "data"),
    ) as server:  # fmt: skip
        yield server.url + "/mcp"


def test_the_official_sdk_client_sends_headers_the_host_accepts(served: str) -> None:
    arguments = {"region": "Zürich ", "limit": 3, "dry": True, "where": {"city": "=?base64?x?="}}

    async def main() -> Any:
        with anyio.fail_after(30):
            async with Client(served, mode="2026-07-28") as client:
                # NOTE: the SDK drops a tool with an invalid x-mcp-header; it must keep ours.
                listed = await client.list_tools()
                assert "query" in [tool.name for tool in listed.tools]
                return await client.call_tool("query", arguments)

    result = anyio.run(main)
    assert not result.is_error
    assert result.structured_content == {**arguments}
