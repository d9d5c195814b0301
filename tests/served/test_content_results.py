"""``returns: content``: an act returns MCP content blocks, checked, sent in each revision's form.

The block checks and the per-revision rewrite are tested directly; then whole calls go through the
real WSGI app (both eras, the at-most-once replay of a content act, a handler returning malformed
blocks) and through ``host stdio``.
"""

from __future__ import annotations

import base64
import json
import logging
import sys
from pathlib import Path
from typing import Any

import anyio
import falcon.testing
import mcp_types
import pytest
from mcp.client.client import Client
from mcp.client.stdio import StdioServerParameters

from host.errors import ContentError
from host.machine.content import content_blocks
from host.protocol import REVISIONS
from host.protocol.adapt import blocks as for_revision_blocks
from host.spec import load_project
from host.spec.check import check_project
from host.spec.model import Act, Project
from support.helpdesk import write_project
from support.legacy import Legacy
from support.modern import Mcp, app_client
from support.servers import run_stdio

pytestmark = pytest.mark.served

PNG = b"\x89PNG\r\n\x1a\n-not-really-a-png"
PNG_B64 = base64.b64encode(PNG).decode()
LINK: dict[str, Any] = {
    "type": "resource_link",
    "uri": "file:///reports/q3.pdf",
    "name": "q3.pdf",
    "title": "Q3 report",
    "mimeType": "application/pdf",
    "icons": [{"src": "https://example.test/pdf.png"}],
    "annotations": {"audience": ["user"], "lastModified": "2026-07-01T00:00:00Z"},
    "_meta": {"example.test/id": 7},
}

SERVER = """\
kind: server
name: media
elicitation: {enabled: true}
"""

TOOLS = """\
kind: tool
name: chart
description: A chart as an image, with a caption, its data and a link to the report.
annotations: {readOnlyHint: true}
steps:
  - act: media:chart
    returns: content
---
kind: tool
name: publish
description: Publish the chart, after a yes; returns what was published.
annotations: {destructiveHint: false}
steps:
  - confirm: go
    message: Publish the chart?
  - act: media:publish
    returns: content
---
kind: tool
name: broken
description: Returns image data that is not base64.
annotations: {readOnlyHint: true}
steps:
  - act: media:broken
    returns: content
---
kind: tool
name: refuses
description: Fails with a tool error before returning any content.
annotations: {readOnlyHint: true}
steps:
  - act: media:refuses
    returns: content
---
kind: tool
name: plain
description: Returns a value (the default), for contrast.
annotations: {readOnlyHint: true}
steps:
  - act: media:plain
"""

HANDLERS = f"""\
import os
from pathlib import Path

from host import ToolError

PNG = {PNG!r}
LINK = {LINK!r}


def chart():
    return [
        "Sales by month",
        {{"type": "image", "data": PNG, "mimeType": "image/png"}},
        {{"type": "resource", "resource": {{"uri": "data://sales.csv", "mimeType": "text/csv",
                                            "text": "month,sales\\\\njan,3"}}}},
        LINK,
    ]


def publish(ctx):
    runs = Path(ctx.data_dir) / "published"
    runs.parent.mkdir(parents=True, exist_ok=True)
    with runs.open("a") as out:
        out.write("x")
    return ["Published.", {{"type": "image", "data": PNG, "mimeType": "image/png"}}]


def broken():
    return [{{"type": "image", "data": "not base64!", "mimeType": "image/png"}}]


def refuses():
    raise ToolError("No chart today.")


def plain():
    return {{"ok": True}}
"""

CHART = [
    {"type": "text", "text": "Sales by month"},
    {"type": "image", "data": PNG_B64, "mimeType": "image/png"},
    {
        "type": "resource",
        "resource": {
            "uri": "data://sales.csv",
            "mimeType": "text/csv",
            "text": "month,sales\\njan,3",
        },
    },
    LINK,
]


def media_project(tmp_path: Path) -> tuple[Path, Path]:
    return write_project(tmp_path, SERVER, TOOLS, HANDLERS, module="media")


@pytest.fixture
def project(tmp_path: Path) -> Project:
    return load_project(*media_project(tmp_path))


@pytest.fixture
def app(tmp_path: Path, project: Project) -> falcon.testing.TestClient:
    return app_client(tmp_path, project)


# --- the blocks ------------------------------------------------------------------------------


def test_texts_become_text_blocks_and_bytes_become_base64() -> None:
    blocks = content_blocks(
        (
            "hello",
            {"type": "audio", "data": b"RIFF", "mimeType": "audio/wav"},
            {"type": "resource", "resource": {"uri": "x://b", "blob": bytearray(b"\x00\x01")}},
        )
    )
    assert blocks == [
        {"type": "text", "text": "hello"},
        {"type": "audio", "data": "UklGRg==", "mimeType": "audio/wav"},
        {"type": "resource", "resource": {"uri": "x://b", "blob": "AAE="}},
    ]
    assert content_blocks([LINK, {"type": "text", "text": ""}]) == [
        LINK,
        {"type": "text", "text": ""},
    ]
    assert content_blocks([]) == []


@pytest.mark.parametrize(
    ("value", "problem"),
    [
        (None, "must return a list of content blocks (or texts), not None"),
        (
            {"type": "text", "text": "x"},
            "must return a list of content blocks (or texts), not a dict",
        ),
        ([3], "content[0] must be a content block (a mapping) or a text, not a int"),
        (
            [{"text": "x"}],
            "content[0] has no type (one of text, image, audio, resource, resource_link)",
        ),
        (["ok", {"type": "img"}], "content[1]: type 'img' is not one of text, image"),
        ([{"type": "image", "data": PNG}], "content[0] (image) is missing mimeType"),
        (
            [{"type": "image", "data": PNG, "mime_type": "image/png"}],
            "content[0] (image): unknown member 'mime_type'; it may have _meta, annotations, data",
        ),
        (
            [{"type": "image", "data": "!!", "mimeType": "image/png"}],
            "content[0] (image): data is not base64",
        ),
        (
            [{"type": "audio", "data": b"", "mimeType": "audio/wav"}],
            "content[0] (audio): data is empty",
        ),
        (
            [{"type": "image", "data": 5, "mimeType": "image/png"}],
            "data must be base64 text or bytes, not a int",
        ),
        (
            [{"type": "image", "data": PNG, "mimeType": "png"}],
            "mimeType 'png' is not a MIME type like image/png",
        ),
        ([{"type": "text", "text": 5}], "content[0] (text): text must be a text, not a int"),
        (
            [{"type": "resource", "resource": {"uri": "x://a"}}],
            "resource needs exactly one of text and blob",
        ),
        (
            [{"type": "resource", "resource": {"uri": "x://a", "text": "t", "blob": "AA=="}}],
            "content[0] (resource): resource needs exactly one of text and blob",
        ),
        (
            [{"type": "resource", "resource": {"text": "t"}}],
            "content[0] (resource): resource is missing uri",
        ),
        (
            [{"type": "resource", "resource": "x://a"}],
            "resource must be a mapping with uri and text or blob",
        ),
        ([{"type": "resource_link", "uri": "x://a"}], "content[0] (resource_link) is missing name"),
        (
            [{**LINK, "size": -1}],
            "content[0] (resource_link): size must be a whole number of bytes, not -1",
        ),
        ([{**LINK, "icons": ["x.png"]}], "icons must be a list of mappings, each with a src"),
        (
            [{**LINK, "annotations": {"priority": 2}}],
            "annotations: priority must be a number from 0 to 1",
        ),
        (
            [{**LINK, "annotations": {"audience": ["bot"]}}],
            "audience must be a list of user and assistant",
        ),
        ([{**LINK, "annotations": {"who": 1}}], "annotations: unknown member 'who'"),
        (
            [{"type": "text", "text": "x", "_meta": [1]}],
            "content[0] (text): _meta must be a mapping",
        ),
        (
            [{"type": "text", "text": "x", "_meta": {"a": object()}}],
            "content[0] (text): _meta is not JSON",
        ),
    ],
)
def test_malformed_blocks_are_refused_with_where_and_what(value: Any, problem: str) -> None:
    with pytest.raises(ContentError) as caught:
        content_blocks(value)
    assert problem in str(caught.value)


def test_each_revision_gets_the_blocks_it_knows() -> None:
    audio: dict[str, Any] = {
        "type": "audio",
        "data": "UklGRg==",
        "mimeType": "audio/wav",
        "_meta": {"k": 1},
    }

    def for_revision(content: list[dict[str, Any]], version: str) -> list[dict[str, Any]]:
        return for_revision_blocks(content, REVISIONS[version])

    blocks = [audio, LINK]
    assert for_revision(blocks, "2026-07-28") is blocks
    assert for_revision(blocks, "2025-11-25") is blocks
    assert for_revision(blocks, "2025-06-18") == [
        audio,
        {k: v for k, v in LINK.items() if k != "icons"},
    ]
    assert for_revision(blocks, "2025-03-26") == [
        {"type": "audio", "data": "UklGRg==", "mimeType": "audio/wav"},
        {
            "type": "text",
            "text": "Q3 report: file:///reports/q3.pdf (application/pdf)",
            "annotations": {"audience": ["user"]},
        },
    ]
    resource: dict[str, Any] = {
        "type": "resource",
        "resource": {"uri": "x://a", "text": "t", "_meta": {"k": 1}},
    }
    assert for_revision([resource], "2025-03-26") == [
        {"type": "resource", "resource": {"uri": "x://a", "text": "t"}}
    ]
    assert LINK["icons"] and resource["resource"]["_meta"]  # the originals are left alone


# --- the spec language ---------------------------------------------------------------------


def test_returns_is_read_into_the_act(project: Project) -> None:
    assert project.tool("chart").act == Act("media:chart", project.tool("chart").act.pos, "content")  # type: ignore[union-attr]
    assert project.tool("plain").act.returns == "value"  # type: ignore[union-attr]


def test_an_unknown_returns_value_is_a_bad_value(tmp_path: Path) -> None:
    specs, handlers = media_project(tmp_path)
    (specs / "tools.yaml").write_text(TOOLS.replace("returns: content", "returns: blocks", 1))
    result = check_project([specs], handlers)
    (problem,) = result.errors
    assert (problem.rule, problem.pos.line, problem.pos.column) == ("bad-value", 7, 14)
    assert "content" in problem.message and "value" in problem.message


def test_content_with_an_output_schema_is_an_error(tmp_path: Path) -> None:
    specs, handlers = media_project(tmp_path)
    (specs / "tools.yaml").write_text(
        TOOLS.replace(
            "annotations: {readOnlyHint: true}\n",
            "annotations: {readOnlyHint: true}\noutput: {}\n",
            1,
        )
    )
    (problem,) = check_project([specs], handlers).errors
    assert problem.rule == "content-output"
    assert (problem.pos.line, problem.pos.column) == (8, 14)
    assert "'chart' declares output:" in problem.message


# --- 2026-07-28 through the app -------------------------------------------------------------


def test_content_blocks_are_the_result(app: falcon.testing.TestClient) -> None:
    client = Mcp(app)
    response = client.call("chart")
    assert response.headers["content-type"].startswith("application/json")
    result = client.result(response)
    assert result["resultType"] == "complete"
    assert result["content"] == CHART
    assert "structuredContent" not in result and "isError" not in result


def test_a_value_tool_is_unchanged(app: falcon.testing.TestClient) -> None:
    result = Mcp(app).result(Mcp(app).call("plain"))
    assert result["structuredContent"] == {"ok": True}
    assert result["content"] == [{"type": "text", "text": '{"ok": true}'}]


def test_malformed_content_is_an_incident_named_in_the_log(
    app: falcon.testing.TestClient, caplog: pytest.LogCaptureFixture
) -> None:
    client = Mcp(app)
    with caplog.at_level(logging.INFO):
        result = client.result(client.call("broken"))
    assert result["isError"] is True
    text = result["content"][0]["text"]
    assert "failed with an internal error (incident " in text
    assert "Traceback" not in text and "base64" not in text
    (record,) = [r for r in caplog.records if getattr(r, "problem", None)]
    assert record.levelname == "ERROR" and record.exc_info is None
    fields = vars(record)
    assert fields["problem"] == (
        "content[0] (image): data is not base64 (give bytes to have it encoded)"
    )
    assert fields["incident"] in text and fields["tool"] == "broken"
    calls = [vars(r) for r in caplog.records if getattr(r, "event", None) == "tool_call"]
    assert calls[-1]["acted"] is True and calls[-1]["incident"] == fields["incident"]


def test_a_tool_error_from_a_content_act_is_a_tool_error(app: falcon.testing.TestClient) -> None:
    result = Mcp(app).result(Mcp(app).call("refuses"))
    assert result == {
        "resultType": "complete",
        "content": [{"type": "text", "text": "No chart today."}],
        "isError": True,
        "_meta": result["_meta"],
    }


def test_a_retried_final_round_replays_the_same_blocks(
    app: falcon.testing.TestClient, tmp_path: Path
) -> None:
    client = Mcp(app)
    first = client.result(client.call("publish"))
    assert first["resultType"] == "input_required"
    answer = {"go": {"action": "accept", "content": {"confirm": True}}}
    results = [
        client.result(client.call("publish", responses=answer, state=first["requestState"]))
        for _ in range(2)
    ]
    expected = [
        {"type": "text", "text": "Published."},
        {"type": "image", "data": PNG_B64, "mimeType": "image/png"},
    ]
    assert [r["content"] for r in results] == [expected, expected]
    assert (tmp_path / "data" / "published").read_text() == "x"


# --- legacy sessions ------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("version", "link"),
    [
        ("2025-11-25", LINK),
        ("2025-06-18", {k: v for k, v in LINK.items() if k != "icons"}),
        (
            "2025-03-26",
            {
                "type": "text",
                "text": "Q3 report: file:///reports/q3.pdf (application/pdf)",
                "annotations": {"audience": ["user"]},
            },
        ),
    ],
)
def test_legacy_sessions_get_what_their_revision_knows(
    app: falcon.testing.TestClient, version: str, link: dict[str, Any]
) -> None:
    legacy = Legacy(app)
    legacy.initialize(version)
    result = legacy.call("chart")
    assert result == {"content": [*CHART[:3], link]}


def test_a_legacy_question_stream_ends_with_the_blocks(app: falcon.testing.TestClient) -> None:
    legacy = Legacy(app)
    legacy.initialize("2025-06-18")
    events = legacy.stream("publish")
    question = events.next()
    assert question["method"] == "elicitation/create"
    assert (
        legacy.answer(question, {"action": "accept", "content": {"confirm": True}}).status_code
        == 202
    )
    (final,) = events.rest()
    assert final["result"]["content"][1] == {
        "type": "image",
        "data": PNG_B64,
        "mimeType": "image/png",
    }


# --- stdio ----------------------------------------------------------------------------------


def test_stdio_sends_blocks_in_both_eras(tmp_path: Path) -> None:
    specs, handlers = media_project(tmp_path)
    meta = {
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {},
    }
    lines = [
        {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "tools/call",
            "params": {"name": "chart", "_meta": meta},
        },
        {
            "jsonrpc": "2.0",
            "id": 2,
            "method": "initialize",
            "params": {
                "protocolVersion": "2025-03-26",
                "capabilities": {},
                "clientInfo": {"name": "t"},
            },
        },
        {"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {"name": "chart"}},
    ]
    stdout = run_stdio(tmp_path, specs, handlers, lines)
    replies = {m["id"]: m for m in map(json.loads, stdout.splitlines())}
    assert replies[1]["result"]["content"] == CHART
    assert replies[3]["result"]["content"][3]["type"] == "text"
    assert replies[3]["result"]["content"][:3] == CHART[:3]


@pytest.mark.parametrize("revision", ["2026-07-28", "2025-11-25", "2025-06-18", "2025-03-26"])
def test_the_official_sdk_client_reads_every_block(
    tmp_path: Path, revision: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    specs, handlers = media_project(tmp_path)
    target = StdioServerParameters(
        command=sys.executable,
        args=["-m", "host", "stdio", "--specs", str(specs), "--handlers", str(handlers)],
        env={"HOST_DATA_DIR": str(tmp_path / "data")},
        cwd=tmp_path,
    )
    if revision != "2026-07-28":
        monkeypatch.setattr("mcp.client.session.LATEST_HANDSHAKE_VERSION", revision)

    async def main() -> Any:
        mode = "2026-07-28" if revision == "2026-07-28" else "legacy"
        with anyio.fail_after(30):
            async with Client(target, mode=mode) as client:
                assert client.protocol_version == revision
                return await client.call_tool("chart", {})

    result = anyio.run(main)
    kinds = [type(block).__name__ for block in result.content]
    link = "TextContent" if revision == "2025-03-26" else "ResourceLink"
    assert kinds == ["TextContent", "ImageContent", "EmbeddedResource", link]
    image = result.content[1]
    assert isinstance(image, mcp_types.ImageContent)
    assert base64.b64decode(image.data) == PNG and image.mime_type == "image/png"
