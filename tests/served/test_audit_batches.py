"""Audit records are written off the request path, in batches: none is lost to a normal exit.

The batcher itself (:class:`host.observers.batches.Batches`), a process that exits right after its
last call, and a real ``host serve`` stopped (SIGTERM) while calls are still coming in.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
from collections.abc import Sequence
from pathlib import Path

import pytest

from host.observers.batches import Batches
from host.store import open_store
from support.servers import alive, clean_env, host_serve
from support.waiting import wait_until
from support.wire import send

pytestmark = pytest.mark.served

VERSION = "2026-07-28"
HEADERS = {"MCP-Protocol-Version": VERSION, "Mcp-Method": "tools/call", "Mcp-Name": "list_outbox"}


def test_items_are_handled_in_order_and_in_batches() -> None:
    seen: list[list[int]] = []
    batches: Batches[int] = Batches(lambda items: seen.append(list(items)), "t", window_s=0.05)

    for n in range(100):
        batches.put(n)

    assert batches.flush(5.0)
    assert [n for batch in seen for n in batch] == list(range(100))
    assert len(seen) < 10  # gathered, not one write per item


def test_flush_waits_for_a_batch_still_gathering() -> None:
    seen: list[int] = []
    batches: Batches[int] = Batches(lambda items: seen.extend(items), "t", window_s=0.5)
    batches.put(1)

    started = time.monotonic()
    assert batches.flush(5.0)
    assert seen == [1] and time.monotonic() - started < 2.0


def test_a_failing_batch_is_logged_and_the_next_one_is_handled(
    caplog: pytest.LogCaptureFixture,
) -> None:
    seen: list[int] = []

    def handle(items: Sequence[int]) -> None:
        if 0 in items:
            raise RuntimeError("the store fell over")
        seen.extend(items)

    batches: Batches[int] = Batches(handle, "t", window_s=0.001)
    batches.put(0)
    assert batches.flush(5.0)
    batches.put(1)
    assert batches.flush(5.0)

    assert seen == [1]
    assert [r.event for r in caplog.records if hasattr(r, "event")] == ["batch_failed"]


def test_a_forked_child_writes_its_own_items_not_the_parents(tmp_path: Path) -> None:
    out = tmp_path / "child.txt"
    parent_seen: list[str] = []
    batches: Batches[str] = Batches(lambda items: parent_seen.extend(items), "t", window_s=1.0)
    batches.put("parent")  # still gathering when the fork happens

    pid = os.fork()
    if pid == 0:  # pragma: no cover - the child
        try:
            child: list[str] = []
            batches._handle = lambda items: child.extend(items)
            batches.put("child")
            batches.flush(5.0)
            out.write_text(json.dumps(child))
        finally:
            os._exit(0)
    os.waitpid(pid, 0)

    assert json.loads(out.read_text()) == ["child"]
    assert batches.flush(5.0) and parent_seen == ["parent"]


EXITS_AT_ONCE = """
import sys, time
from host.observers.audit import AuditObserver
from host.protocol import Round
from host.store import open_store

store = open_store(sys.argv[1])
observer = AuditObserver(store, 86400, window_s=2.0)
for n in range(5):
    observer.round_ended(Round("probe", 1, "bob", time.monotonic(), nonce=f"n-{n}", ends=True))
"""


def test_a_process_that_exits_normally_writes_what_it_still_holds(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'store.db'}"
    done = subprocess.run(
        [sys.executable, "-c", EXITS_AT_ONCE, url],
        env=clean_env(HOST_STORE_VOLATILE_OK="1"), capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr

    store = open_store(url)
    try:
        assert len(store.audit_records(tool="probe")) == 5
    finally:
        store.close()


def test_a_server_stopped_mid_traffic_keeps_a_record_of_every_answered_call(
    tmp_path: Path,
) -> None:
    answered: list[int] = []
    with host_serve(tmp_path, "host", "--workers", "2") as server:
        master = server.pid
        stopping = threading.Event()

        def caller(offset: int) -> None:
            conn = server.connect()
            for n in range(offset, offset + 10_000, 1):
                if stopping.is_set():
                    return
                body = {
                    "jsonrpc": "2.0", "id": n, "method": "tools/call",
                    "params": {"name": "list_outbox", "arguments": {}, "_meta": {
                        "io.modelcontextprotocol/protocolVersion": VERSION,
                        "io.modelcontextprotocol/clientCapabilities": {},
                    }},
                }  # fmt: skip
                try:
                    reply = json.loads(send(conn, body, **HEADERS).read())
                except (OSError, ValueError):
                    return  # the server went away mid-call: not answered
                if "result" in reply and not reply["result"].get("isError"):
                    answered.append(n)

        threads = [threading.Thread(target=caller, args=(k * 10_000,)) for k in range(4)]
        for thread in threads:
            thread.start()
        time.sleep(1.5)  # the scenario: calls in flight for a while, then the stop
        # NOTE: SIGTERM while calls are in flight: gunicorn's graceful stop, as a deploy does.
        os.kill(master, 15)
        for thread in threads:
            thread.join(30)
        stopping.set()
        assert wait_until(lambda: not alive(master), 30)

        store = open_store(f"sqlite:///{tmp_path / 'host' / 'store.db'}")
        try:
            records = store.audit_records(tool="list_outbox", limit=100_000)
        finally:
            store.close()

    assert len(answered) > 20
    assert len(records) == len(answered)
