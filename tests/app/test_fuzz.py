"""Hostile input through the WSGI app: malformed but plausible requests, seeded and bounded.

Hypothesis builds requests the way a broken or hostile client would: right and wrong methods, tool
names, arguments of every shape, ``inputResponses`` full of junk, ``_meta`` with missing or
mistyped keys and unknown versions, ``requestState`` that is garbage or a real state tampered with,
headers that disagree with the body, odd media types, and bodies that are not JSON at all. Every
tool of the fuzzed server asks before it acts, and no request carries a state it was not given
intact, so no request may ever make an act run. Whatever comes in:

* never a 5xx, never a traceback;
* a JSON body (or nothing, for 202/204), and a JSON-RPC error where the body has one;
* nothing acted.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import falcon.testing
import pytest
from hypothesis import HealthCheck, event, given, seed, settings
from hypothesis import strategies as st

from host.spec import load_project
from host.web.app import create_app
from support.helpdesk import settings_for

SPECS = """
kind: server
name: fuzz
version: "1"
elicitation: {enabled: true}
---
kind: tool
name: zap
description: Asks, then acts.
input:
  properties:
    target: {type: string, maxLength: 40}
    count: {type: integer, minimum: 0}
  required: [target]
steps:
  - confirm: sure
    message: Zap {{ target }}?
  - act: f:act
---
kind: tool
name: pick
description: Two questions, then acts.
input: {properties: {target: {type: string}}, required: [target]}
steps:
  - ask: how
    message: How to treat {{ target }}?
    form:
      mode: {type: string, enum: [soft, hard]}
      note: {type: string, optional: true, maxLength: 20}
  - confirm: go
    message: Do it {{ mode }}?
  - act: f:act
"""

HANDLERS = """
import os

def act(target, ctx):
    path = os.path.join(os.environ["HOST_DATA_DIR"], "acts")
    with open(path, "a") as f:
        f.write(target + "\\n")
    return {"done": target}
"""

JSON = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-(2**70), 2**70)
    | st.floats(allow_nan=False)
    | st.text(max_size=30),
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=10), inner, max_size=4)
    ),
    max_leaves=12,
)
ANSWER = st.one_of(
    JSON,
    st.fixed_dictionaries(
        {"action": st.sampled_from(["accept", "decline", "cancel", "ACCEPT", "", None])},
        optional={"content": JSON | st.fixed_dictionaries({"confirm": JSON, "mode": JSON})},
    ),
)
VERSIONS = st.sampled_from(["2026-07-28", "2025-11-25", "2025-06-18", "2024-11-05", "", "x"])
META = st.fixed_dictionaries(
    {},
    optional={
        "io.modelcontextprotocol/protocolVersion": VERSIONS | JSON,
        "io.modelcontextprotocol/clientCapabilities": st.sampled_from(
            [{"elicitation": {}}, {"elicitation": {"form": {}}}, {}, {"elicitation": 1}, []]
        )
        | JSON,
        "io.modelcontextprotocol/logLevel": st.sampled_from(["debug", "nope", 3]),
        "progressToken": JSON,
        "traceparent": st.text(max_size=60),
    },
)
PARAMS = st.fixed_dictionaries(
    {},
    optional={
        "name": st.sampled_from(["zap", "pick", "nope", "sendElicitationResult", ""]) | JSON,
        "arguments": st.fixed_dictionaries({}, optional={"target": JSON, "count": JSON}) | JSON,
        "inputResponses": st.dictionaries(
            st.sampled_from(["sure", "how", "go", "zz", ""]), ANSWER, max_size=3
        )
        | JSON,
        "requestState": st.text(max_size=80) | JSON,
        "_meta": META | JSON,
        "cursor": JSON,
    },
)
METHODS = st.sampled_from(
    ["tools/call", "tools/list", "server/discover", "initialize", "ping", "resources/list", ""]
)
GOOD_META = st.fixed_dictionaries(
    {
        "io.modelcontextprotocol/protocolVersion": st.just("2026-07-28"),
        "io.modelcontextprotocol/clientCapabilities": st.sampled_from(
            [{"elicitation": {}}, {"elicitation": {"form": {}}}, {}, {"elicitation": {"url": {}}}]
        ),
    }
)
CALL = st.fixed_dictionaries(
    {
        "name": st.sampled_from(["zap", "pick", "zap", "pick", "nope"]),
        "arguments": st.one_of(
            *[st.fixed_dictionaries({"target": st.text(max_size=8)}, optional={"count": JSON})] * 3,
            JSON,
        ),
        "_meta": st.one_of(GOOD_META, GOOD_META, GOOD_META, META),
    },
    optional={
        "inputResponses": st.dictionaries(
            st.sampled_from(["sure", "how", "go", "zz", ""]), ANSWER, max_size=3
        )
        | JSON,
        "requestState": st.text(max_size=80) | JSON,
    },
)
HEADERS = st.fixed_dictionaries(
    {},
    optional={
        "MCP-Protocol-Version": VERSIONS,
        "Mcp-Method": METHODS,
        "Mcp-Name": st.sampled_from(["zap", "pick", "=?base64?em9w?=", "=?base64?!!?="]),
        "Mcp-Session-Id": st.text(alphabet="abcdefXYZ0123.-_", max_size=40),
        "Accept": st.sampled_from(["application/json", "text/event-stream", "*/*", "image/png"]),
        "Content-Type": st.sampled_from(["application/json", "text/plain", "application/json; x"]),
        "Origin": st.sampled_from(["http://localhost:3000", "https://evil.example", "null"]),
        "Mcp-Param-Target": st.text(alphabet="abcxyz=?", max_size=12),
    },
)


@st.composite
def requests(draw: st.DrawFn) -> tuple[dict[str, Any], dict[str, str]]:
    """A request and its headers: mostly well framed, so the fuzz reaches the machine."""
    if draw(st.integers(0, 3)):
        params = draw(CALL)
        message: dict[str, Any] = {
            "jsonrpc": "2.0",
            "id": draw(st.integers(1, 9)),
            "method": "tools/call",
            "params": params,
        }
        name = params["name"]
        headers = {
            "MCP-Protocol-Version": "2026-07-28",
            "Mcp-Method": "tools/call",
            "Mcp-Name": name,
            "Accept": "application/json, text/event-stream",
            "Content-Type": "application/json",
        }
        if not draw(st.integers(0, 3)):
            headers.update(draw(HEADERS))  # then some of them disagree
        return message, headers
    message = draw(
        st.fixed_dictionaries(
            {"jsonrpc": st.sampled_from(["2.0", "1.0", None]), "method": METHODS | JSON},
            optional={
                "id": st.integers(-5, 5) | st.text(max_size=5) | JSON,
                "params": PARAMS | JSON,
            },
        )
    )
    return message, draw(HEADERS)


@pytest.fixture(scope="module")
def fuzzed(tmp_path_factory: pytest.TempPathFactory) -> tuple[falcon.testing.TestClient, Path]:
    root = tmp_path_factory.mktemp("fuzz")
    (root / "specs").mkdir()
    (root / "handlers").mkdir()
    (root / "specs" / "fuzz.yaml").write_text(SPECS)
    (root / "handlers" / "f.py").write_text(HANDLERS)
    project = load_project(root / "specs", root / "handlers")
    data = root / "data"
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("HOST_DATA_DIR", str(data))
        app = create_app(settings=settings_for(root), project=project)
    return falcon.testing.TestClient(app), data


def real_state(http: falcon.testing.TestClient) -> str:
    """A genuine requestState of zap(target=a), for tampering."""
    body = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "tools/call",
        "params": {
            "name": "zap",
            "arguments": {"target": "a"},
            "_meta": {
                "io.modelcontextprotocol/protocolVersion": "2026-07-28",
                "io.modelcontextprotocol/clientCapabilities": {"elicitation": {}},
            },
        },
    }
    headers = {"MCP-Protocol-Version": "2026-07-28", "Mcp-Method": "tools/call", "Mcp-Name": "zap"}
    state: str = http.simulate_post("/mcp", json=body, headers=headers).json["result"][
        "requestState"
    ]
    return state


def check(response: falcon.testing.Result, data: Path) -> None:
    event(f"HTTP {response.status_code}")
    assert response.status_code < 500, response.text
    assert "Traceback" not in response.text
    if response.status_code in (202, 204):
        return
    if response.headers.get("content-type", "").startswith("text/event-stream"):
        events = [line[6:] for line in response.text.splitlines() if line.startswith("data: ")]
        assert events, response.text
        for line in events:
            json.loads(line)
        return
    body = response.json
    assert isinstance(body, dict), response.text
    if "error" in body and "jsonrpc" in body:
        assert isinstance(body["error"]["code"], int)
        assert isinstance(body["error"]["message"], str)
    assert not (data / "acts").exists(), "a fuzzed request made an act run"


@seed(20261203)
@settings(max_examples=500, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(request=requests(), tamper=st.integers(0, 3), cut=st.integers(0, 200))
def test_no_request_breaks_the_host_or_acts(
    fuzzed: tuple[falcon.testing.TestClient, Path],
    request: tuple[dict[str, Any], dict[str, str]],
    tamper: int,
    cut: int,
) -> None:
    http, data = fuzzed
    message, headers = request
    params = message.get("params")
    if tamper and isinstance(params, dict) and "requestState" in params:
        # NOTE: a real state, tampered with: cut short, a character flipped, or moved to a
        # different tool or arguments (which it is not bound to).
        state = real_state(http)
        params["requestState"] = {
            1: state[: cut % len(state)],
            2: state[: cut % len(state)]
            + ("A" if state[cut % len(state)] != "A" else "B")
            + state[cut % len(state) + 1 :],
            3: state,
        }[tamper]
        if tamper == 3:
            params["arguments"] = {"target": "b"}
    check(http.simulate_post("/mcp", body=json.dumps(message), headers=headers), data)


@seed(20261204)
@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(body=st.binary(max_size=300) | st.text(max_size=300).map(str.encode), headers=HEADERS)
def test_bytes_that_are_not_a_message_get_a_json_error(
    fuzzed: tuple[falcon.testing.TestClient, Path], body: bytes, headers: dict[str, str]
) -> None:
    http, data = fuzzed
    check(http.simulate_post("/mcp", body=body, headers=headers), data)


@seed(20261205)
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(method=st.sampled_from(["GET", "DELETE", "PUT", "PATCH", "OPTIONS"]), headers=HEADERS)
def test_other_http_methods_get_a_clear_answer(
    fuzzed: tuple[falcon.testing.TestClient, Path], method: str, headers: dict[str, str]
) -> None:
    http, data = fuzzed
    response = http.simulate_request(method, "/mcp", headers=headers)
    assert response.status_code < 500, response.text
    if response.status_code not in (204,):
        assert response.text == "" or isinstance(response.json, dict)
    assert not (data / "acts").exists()
