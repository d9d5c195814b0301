"""Acts are always audited: a worker killed right after its act took effect leaves a record.

``host serve`` with two workers; the act writes its effect to a file, then lingers, and the test
kills the worker in that moment (after the effect, before the round could end). Nobody retries:
the record is in the store already, written before the act started (with a later round's claim,
or alone for a first round's act, which has no claim), and shown once the round could have ended.
"""

from __future__ import annotations

import json
import os
import signal
from collections.abc import Iterator
from pathlib import Path

import pytest

from host.store import open_store
from support.modern import call
from support.servers import Server, host_serve
from support.waiting import wait_until

pytestmark = pytest.mark.served

SPECS = """
kind: server
name: audited
version: "1"
elicitation: {enabled: true}
---
kind: tool
name: pay
description: Pays after a yes.
input: {properties: {pin: {type: string}, to: {type: string}}, required: [pin, to]}
audit: {redact: [pin]}
steps:
  - confirm: go
    message: Pay {{ to }}?
  - act: p:pay
    timeout: 1s
---
kind: tool
name: send
description: Sends at once, asking nothing.
input: {properties: {to: {type: string}}, required: [to]}
steps:
  - act: p:send
    timeout: 1s
"""

HANDLERS = """
import os, time

def pay(pin, to):
    with open(os.path.join(os.environ["HOST_DATA_DIR"], "paid"), "a") as f:
        f.write(f"{to} {os.getpid()}\\n")
    time.sleep(20)
    return {"paid": to}

def send(to):
    with open(os.path.join(os.environ["HOST_DATA_DIR"], "sent"), "a") as f:
        f.write(f"{to} {os.getpid()}\\n")
    time.sleep(20)
    return {"sent": to}
"""

PIN = "pin-4417-clear"
YES = {"go": {"action": "accept", "content": {"confirm": True}}}
META = {
    "io.modelcontextprotocol/protocolVersion": "2026-07-28",
    "io.modelcontextprotocol/clientCapabilities": {"elicitation": {}},
}


def written(effect: Path) -> list[list[str]]:
    """The lines an act wrote to ``effect``, once each is whole; none before.

    NOTE: the handler's ``open(..., "a")`` makes the file before its line is written (at
    ``close``): waiting for the file to exist and reading it at once read it empty under load
    ("not enough values to unpack"). A line is the act's word only once its newline is there.
    """
    try:
        text = effect.read_text()
    except FileNotFoundError:
        return []
    return [line.split() for line in text.splitlines()] if text.endswith("\n") else []


@pytest.fixture
def serving(tmp_path: Path) -> Iterator[Server]:
    for name, folder in (("specs", "pay.yaml"), ("handlers", "p.py")):
        (tmp_path / name).mkdir()
        (tmp_path / name / folder).write_text(SPECS if name == "specs" else HANDLERS)
    with host_serve(tmp_path, "host", "--workers", "2", specs=tmp_path / "specs") as server:
        yield server


def test_a_worker_killed_after_its_act_took_effect_leaves_a_record_without_a_retry(
    serving: Server, tmp_path: Path
) -> None:
    data, arguments = tmp_path / "host", {"pin": PIN, "to": "bob"}
    first = call(serving.connect(), "pay", arguments)
    params = {"name": "pay", "arguments": arguments, "inputResponses": YES,
              "requestState": first["requestState"], "_meta": META}  # fmt: skip
    headers = {"Content-Type": "application/json", "MCP-Protocol-Version": "2026-07-28",
               "Accept": "application/json, text/event-stream",
               "Mcp-Method": "tools/call", "Mcp-Name": "pay"}  # fmt: skip
    conn = serving.connect()
    body = {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": params}
    conn.request("POST", "/mcp", json.dumps(body), headers)
    paid = data / "paid"
    assert wait_until(lambda: written(paid), 15)
    ((_, pid),) = written(paid)
    os.kill(int(pid), signal.SIGKILL)

    store = open_store(f"sqlite:///{data / 'store.db'}")
    try:
        # NOTE: shown once its round could have ended (the 1 s limit and a 5 s lease).
        assert wait_until(lambda: bool(store.audit_records(tool="pay")), 15)
        [record] = store.audit_records(tool="pay")
    finally:
        store.close()
    assert (record.outcome, record.acted) == ("incident", True)
    assert record.arguments == {"pin": "[redacted]", "to": "bob"}
    assert record.answers == {"go": {"action": "accept", "content": {"confirm": True}}}
    assert record.incident and "worker stopped" in (record.note or "")
    for path in data.glob("store.db*"):
        assert PIN.encode() not in path.read_bytes(), path.name


def test_a_worker_killed_after_a_first_round_act_took_effect_leaves_a_record(
    serving: Server, tmp_path: Path
) -> None:
    data = tmp_path / "host"
    params = {"name": "send", "arguments": {"to": "carol"}, "_meta": META}
    headers = {"Content-Type": "application/json", "MCP-Protocol-Version": "2026-07-28",
               "Accept": "application/json, text/event-stream",
               "Mcp-Method": "tools/call", "Mcp-Name": "send"}  # fmt: skip
    conn = serving.connect()
    body = {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": params}
    conn.request("POST", "/mcp", json.dumps(body), headers)
    sent = data / "sent"
    assert wait_until(lambda: written(sent), 15)
    ((_, pid),) = written(sent)
    os.kill(int(pid), signal.SIGKILL)

    store = open_store(f"sqlite:///{data / 'store.db'}")
    try:
        # NOTE: none at first: the round could still end (its 1 s limit and a 5 s lease).
        assert store.audit_records(tool="send") == []
        assert wait_until(lambda: bool(store.audit_records(tool="send")), 15)
        [record] = store.audit_records(tool="send")
    finally:
        store.close()
    assert (record.outcome, record.acted) == ("incident", True)
    assert (record.principal, record.arguments) == ("anonymous", {"to": "carol"})
    assert record.incident and "worker stopped" in (record.note or "")
