"""Calls bound to the tool's definition: a reload that changed the tool never lets an old call act.

Issue 21's rows, as the attacker played them against ``host serve`` (two workers, SQLite and
Redis): a call's first round under version 1 of a tool, a reload (the spec rewritten, SIGHUP,
new workers), then the old call's next round under version 2. Whatever carries the call between
rounds (a modern ``requestState``, a question on a legacy call's stream, a fallback record, a
remembered yes), the new tool does not act: the call ends with a result that says the tool
changed, or its question is asked again. A ``decline`` never becomes an act.

The digest itself is of what the tool means: moving a tool in its file, commenting it or
rewording its description does not change it; a question's text, an act or the input does.
"""

from __future__ import annotations

import http.client
import json
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from host.machine import compile_project
from host.machine.definition import definition_digest
from host.protocol import Asked, Call, Finished, Ledger, RequestContext, ToolHost
from host.protocol.approvals import StoreApprovals
from host.spec import load_project
from host.store import open_store
from support.legacy import LegacyHttp
from support.modern import call
from support.servers import Server, host_serve
from support.site import Site
from support.wire import HEADERS, send, sse

pytestmark = pytest.mark.served

YES = {"action": "accept", "content": {"confirm": True}}
DECLINE = {"action": "decline"}
TOOLS = ("restart_db", "close_state", "close_state_yes", "close_stream", "close_fallback")


@pytest.fixture(scope="module", params=["sqlite", "redis"])
def served(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[tuple[Site, Server]]:
    folder = tmp_path_factory.mktemp(f"defs-{request.param}")
    if request.param == "redis":
        store = request.getfixturevalue("redis_url")
    else:
        store = f"sqlite:///{folder / 'store.db'}"
    site = Site(folder / "site", TOOLS, store)
    with host_serve(
        folder, "host", "--workers", "2", "--threads", "8", specs=site.specs, **site.env()
    ) as server:
        yield site, server


def modern(server: Server, name: str, arguments: dict[str, Any], **extra: Any) -> dict[str, Any]:
    return call(server.connect(), name, arguments, **extra)


def said(result: dict[str, Any]) -> str:
    return " ".join(block.get("text", "") for block in result.get("content", []))


# --- over real HTTP, a reload between rounds ---------------------------------------------------


def test_a_remembered_yes_does_not_count_for_a_changed_question(
    served: tuple[Site, Server],
) -> None:
    site, server = served
    args = {"service": "db"}
    asked = modern(server, "restart_db", args)
    assert asked["resultType"] == "input_required"
    assert asked["inputRequests"]["go"]["params"]["message"] == "Restart db in prod?"
    done = modern(
        server, "restart_db", args, inputResponses={"go": YES}, requestState=asked["requestState"]
    )
    assert done["structuredContent"] == {"restarted": "db"}
    # The yes is remembered: the same call is not asked again.
    assert modern(server, "restart_db", args)["structuredContent"] == {"restarted": "db"}

    site.reload(server, "restart_db")

    again = modern(server, "restart_db", args)
    assert again["resultType"] == "input_required"
    message = again["inputRequests"]["go"]["params"]["message"]
    assert message == "DROP ALL DATA of db in prod and restart it?"
    assert site.acts(act="drop") == []
    assert len(site.acts(act="restart", service="db")) == 2


@pytest.mark.parametrize(("tool", "answer"), [("close_state", DECLINE), ("close_state_yes", YES)])
def test_an_old_request_state_does_not_make_the_new_tool_act(
    served: tuple[Site, Server], tool: str, answer: dict[str, Any]
) -> None:
    site, server = served
    asked = modern(server, tool, {"id": "T-1"})
    assert asked["resultType"] == "input_required"

    site.reload(server, tool)

    final = modern(
        server,
        tool,
        {"id": "T-1"},
        inputResponses={"go": answer},
        requestState=asked["requestState"],
    )
    assert final.get("isError") is True
    assert "changed" in said(final) and "nothing was done" in said(final)
    assert site.acts(id="T-1", act="close") == []
    # A new call of the new tool acts (it asks nothing now).
    assert modern(server, tool, {"id": "T-2"})["structuredContent"] == {"closed": "T-2"}


def test_an_open_legacy_question_does_not_make_the_new_tool_act(
    served: tuple[Site, Server],
) -> None:
    site, server = served
    session = LegacyHttp(server, {"elicitation": {"form": {}}})
    headers = {**HEADERS, "Mcp-Session-Id": session.session, "MCP-Protocol-Version": "2025-11-25"}
    body = {
        "jsonrpc": "2.0",
        "id": 9,
        "method": "tools/call",
        "params": {"name": "close_stream", "arguments": {"id": "T-3"}},
    }
    conn = http.client.HTTPConnection("127.0.0.1", server.port, timeout=30)
    conn.request("POST", "/mcp", json.dumps(body), headers)
    stream = conn.getresponse()
    messages = sse(stream)
    question = next(messages)
    assert question["method"] == "elicitation/create"

    # NOTE: the worker holding the stream is an old one now; it keeps it for its graceful time.
    site.reload(server, "close_stream")

    answer = {"jsonrpc": "2.0", "id": question["id"], "result": YES}
    relayed = send(server.connect(), answer, **headers)
    assert relayed.status == 202
    final = next(messages)
    assert final["id"] == 9
    assert final["result"]["isError"] is True and "changed" in said(final["result"])
    assert site.acts(id="T-3") == []


def test_a_fallback_record_does_not_make_the_new_tool_act(served: tuple[Site, Server]) -> None:
    site, server = served
    session = LegacyHttp(server)
    first = session.request("tools/call", {"name": "close_fallback", "arguments": {"id": "T-4"}})
    request = json.loads(first["result"]["content"][1]["text"])

    site.reload(server, "close_fallback")

    params = {"elicitationId": request["elicitationId"], "action": "decline"}
    answered = session.request("tools/call", {"name": "sendElicitationResult", "arguments": params})
    result = answered["result"]
    assert result["isError"] is True and "changed" in said(result)
    assert site.acts(id="T-4") == []


# --- the digest, and the core, in process ------------------------------------------------------

SPEC = """\
kind: server
name: digests
elicitation: {enabled: true}
---
kind: tool
name: close
description: Close a ticket.
input: {properties: {id: {type: string}}, required: [id]}
steps:
  - confirm: go
    message: "Close ticket {{ id }}?"
  - act: ops:close
"""


def digests(tmp_path: Path, text: str) -> str:
    (tmp_path / "specs").mkdir(exist_ok=True)
    (tmp_path / "handlers").mkdir(exist_ok=True)
    (tmp_path / "handlers" / "ops.py").write_text(
        "def close(id):\n    return id\n\n\ndef shut(id):\n    return id\n"
    )
    (tmp_path / "specs" / "tools.yaml").write_text(text)
    project = load_project(tmp_path / "specs", tmp_path / "handlers")
    tool = project.tool("close")
    assert tool is not None
    machine = compile_project(project)["close"]
    assert machine.definition == definition_digest(tool)
    return machine.definition


def test_the_digest_is_of_what_the_tool_means(tmp_path: Path) -> None:
    base = digests(tmp_path, SPEC)
    moved = "# a comment\n\n" + SPEC.replace("steps:", "# the steps\nsteps:")
    assert digests(tmp_path, moved) == base
    assert digests(tmp_path, SPEC.replace("Close a ticket.", "Close one ticket.")) == base
    for changed in (
        SPEC.replace("Close ticket {{ id }}?", "Delete ticket {{ id }}?"),
        SPEC.replace("ops:close", "ops:shut"),
        SPEC.replace("{id: {type: string}}", "{id: {type: string, maxLength: 9}}"),
    ):
        assert digests(tmp_path, changed) != base


def test_a_ledger_carries_its_definition_through_its_payload() -> None:
    ledger = Ledger("n", 2, {"go": "d"}, definition="v1")
    assert Ledger.from_payload(json.loads(json.dumps(ledger.to_payload()))) == ledger
    assert ledger.fits("v1") and not ledger.fits("v2")
    # A payload from before definitions were carried fits no compiled tool.
    old = {k: v for k, v in ledger.to_payload().items() if k != "v"}
    assert not Ledger.from_payload(old).fits("v1")


WHEN_SPEC = """\
kind: server
name: noes
elicitation: {enabled: true}
---
kind: tool
name: close
description: Close a ticket, asking only while the world says so.
input: {properties: {id: {type: string}}, required: [id]}
steps:
  - read: world
    call: ops:world
  - confirm: go
    message: "Close ticket {{ id }}?"
    when: world.ask
  - act: ops:close
"""

WHEN_HANDLERS = """\
WORLD = {"ask": True}
ACTS = []


def world():
    return dict(WORLD)


def close(id):
    ACTS.append(id)
    return {"closed": id}
"""


def test_a_decline_never_becomes_an_act_even_when_its_question_is_no_longer_asked(
    tmp_path: Path,
) -> None:
    (tmp_path / "specs").mkdir()
    (tmp_path / "handlers").mkdir()
    (tmp_path / "specs" / "tools.yaml").write_text(WHEN_SPEC)
    (tmp_path / "handlers" / "ops.py").write_text(WHEN_HANDLERS)
    project = load_project(tmp_path / "specs", tmp_path / "handlers")
    machines = compile_project(project)
    machine = machines["close"]
    handlers = machine.act.function.__globals__
    store = open_store(f"sqlite:///{tmp_path / 'store.db'}")
    host = ToolHost(project.server, machines, store, data_dir=tmp_path, observers=())
    args = {"id": "T-9"}

    asked = host.advance(Call(machine, args, RequestContext(), Ledger.start()))
    assert isinstance(asked, Asked) and [q.key for q in asked.questions] == ["go"]
    handlers["WORLD"]["ask"] = False  # the read now says: no question
    for answer in (DECLINE, {"action": "cancel"}):
        ended = host.advance(Call(machine, args, RequestContext(), asked.ledger, {"go": answer}))
        assert isinstance(ended, Finished)
        assert not ended.outcome.acted and ended.outcome.ending in ("declined", "cancelled")
    assert handlers["ACTS"] == []
    # A yes to the same question still acts: only a no is held against the act.
    done = host.advance(Call(machine, args, RequestContext(), asked.ledger, {"go": YES}))
    assert isinstance(done, Finished) and done.outcome.acted and handlers["ACTS"] == ["T-9"]
    store.close()


def test_a_yes_counts_for_its_definition_and_one_without_a_digest_never(tmp_path: Path) -> None:
    store = open_store(f"sqlite:///{tmp_path / 'store.db'}")
    given = StoreApprovals(store, "alice", "restart", "v1")
    given.remember("go", "db", 3600)
    assert given.remembered("go", "db")
    reloaded = StoreApprovals(store, "alice", "restart", "v2")
    assert not reloaded.remembered("go", "db")
    time.sleep(0.05)
    # A yes kept without the host (no digest of its own): nothing says which definition it was
    # given under, so it counts under none, before a reload or after.
    store.grant_approval("alice", "restart", "go", "db", 3600)
    assert not reloaded.remembered("go", "db")
    assert not given.remembered("go", "db")
    store.grant_approval("bob", "restart", "go", "db", 3600)
    assert not StoreApprovals(store, "bob", "restart", "v1").remembered("go", "db")
    # Kept through the host again, it counts for the definition it was given under.
    reloaded.remember("go", "db", 3600)
    assert reloaded.remembered("go", "db") and not given.remembered("go", "db")
    store.close()
