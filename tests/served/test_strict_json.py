"""Request bodies are I-JSON (RFC 7493): what a hostile client's odd JSON gets, over HTTP and stdio.

Python's parser reads ``NaN``, ``Infinity``, ``1e999`` (as infinity) and lone surrogates
(``"\\ud800"``) without complaint; each got past the first version to fail later, while sealing a
state (HTTP 500) or printing the audit trail (invalid JSON). Now each is -32700, naming what and
where, before anything else runs.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from support.helpdesk import ticket
from support.modern import make_client
from support.paths import ROOT
from support.stdio import Stdio

pytestmark = pytest.mark.served

META = {
    "io.modelcontextprotocol/protocolVersion": "2026-07-28",
    "io.modelcontextprotocol/clientCapabilities": {"elicitation": {"form": {}}},
}

#: (raw "id" argument of close_ticket, the path and the words the error names)
BAD = [
    (b'"T-1", "note": NaN', "/params/arguments/note", "NaN"),
    (b'"T-1", "note": Infinity', "/params/arguments/note", "Infinity"),
    (b'"T-1", "note": -Infinity', "/params/arguments/note", "-Infinity"),
    (b'"T-1", "note": 1e999', "/params/arguments/note", "1e999"),
    (b'"T-1", "note": [-1e400]', "/params/arguments/note/0", "-1e400"),
    (b'"T-1", "note": 1' + b"0" * 400, "/params/arguments/note", "outside the range"),
    (b'"T-1\\ud800"', "/params/arguments/id", "lone surrogate"),
    (b'"T-1", "\\udfff": 1', "/params/arguments/\\udfff", "lone surrogate"),
    (b'"T-1", "note": "\xed\xa0\x80"', "/params/arguments/note", "lone surrogate"),
]


def untouched(db: Path) -> bool:
    """Whether no close_ticket handler ran (its database is made on first use)."""
    return not db.exists() or (ticket(db, "T-1") or {}).get("status") != "closed"


def body(raw_id: bytes, request_id: bytes = b"7") -> bytes:
    return (
        b'{"jsonrpc": "2.0", "id": ' + request_id + b', "method": "tools/call", "params": '
        b'{"name": "close_ticket", "arguments": {"id": '
        + raw_id
        + b'}, "_meta": '
        + json.dumps(META).encode()
        + b"}}"
    )


@pytest.mark.parametrize(("raw", "path", "words"), BAD)
def test_a_body_that_is_not_i_json_is_a_parse_error_over_http(
    tmp_path: Path, db: Path, raw: bytes, path: str, words: str
) -> None:
    mcp = make_client(tmp_path)
    response = mcp.post(None, mcp.headers("tools/call", "close_ticket"), raw=body(raw))
    assert response.status_code == 400, response.text
    error = response.json["error"]
    assert response.json["id"] == 7
    assert error["code"] == -32700
    assert words in error["message"] and path in error["message"]
    assert error["data"]["path"] == path
    assert untouched(db)


def test_well_formed_astral_characters_and_big_numbers_still_pass(tmp_path: Path, db: Path) -> None:
    mcp = make_client(tmp_path)
    raw = body(b'"T-1", "note": ["\\ud83d\\ude00", 1e308, 123456789012345678901234567890]')
    response = mcp.post(None, mcp.headers("tools/call", "close_ticket"), raw=raw)
    assert response.json.get("error", {}).get("code") != -32700, response.text


def test_an_id_that_is_a_lone_surrogate_is_not_echoed(tmp_path: Path, db: Path) -> None:
    mcp = make_client(tmp_path)
    raw = body(b'"T-1"', b'"\\ud800"')
    response = mcp.post(None, mcp.headers("tools/call", "close_ticket"), raw=raw)
    assert response.status_code == 400
    assert response.json["id"] is None
    assert response.json["error"]["data"]["path"] == "/id"


def test_a_body_that_is_not_i_json_is_a_parse_error_over_stdio(tmp_path: Path, db: Path) -> None:
    stdio = Stdio(tmp_path, "--specs", str(ROOT / "specs"))
    for n, (raw, path, words) in enumerate(BAD, start=1):
        stdio.send(body(raw, str(n).encode()))
        reply = stdio.receive()
        assert reply["id"] == n, reply
        assert reply["error"]["code"] == -32700
        assert words in reply["error"]["message"] and reply["error"]["data"]["path"] == path
    rest, status = stdio.close()
    assert (rest, status) == (b"", 0)
    assert untouched(db)


WEIRD_SPEC = """
kind: server
name: odd
version: "1"
---
kind: tool
name: weird
description: Answers with what JSON cannot carry.
steps:
  - act: odd:weird
"""

WEIRD_HANDLER = """
def weird(ctx):
    return {"text": "a\\ud800b", "n": float("nan")}
"""


def test_a_handler_answer_json_cannot_carry_is_sent_as_the_audit_keeps_it_over_stdio(
    tmp_path: Path,
) -> None:
    # NOTE: it was an internal error (-32603) once the act had run; now the result is sent,
    # with NaN by name and the lone surrogate as U+FFFD (host.jsonvalues), over every transport.
    (tmp_path / "specs").mkdir()
    (tmp_path / "handlers").mkdir()
    (tmp_path / "specs" / "odd.yaml").write_text(WEIRD_SPEC)
    (tmp_path / "handlers" / "odd.py").write_text(WEIRD_HANDLER)
    stdio = Stdio(
        tmp_path, "--specs", str(tmp_path / "specs"), "--handlers", str(tmp_path / "handlers")
    )
    call = {"name": "weird", "arguments": {}, "_meta": META}
    stdio.send({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": call})
    reply = stdio.receive()
    assert reply["id"] == 1 and reply["result"]["structuredContent"] == {
        "text": "a\ufffdb",
        "n": "nan",
    }
    stdio.send({"jsonrpc": "2.0", "id": 2, "method": "tools/list", "params": {"_meta": META}})
    assert [t["name"] for t in stdio.receive()["result"]["tools"]] == ["weird"]
    assert stdio.close()[1] == 0
