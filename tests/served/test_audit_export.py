"""The audit trail's export: a file equal to the trail after faults, and OTLP to a collector.

``host serve`` with two workers exports to a small, rotating file while calls go on; its folder is
made unwritable for a while (a file where the folder was: root ignores modes) and a worker is
killed while calls run. Afterwards the export, its rotated files and the current one in order, is
the trail: every entry once, in seq order, each line the record ``host audit --format json``
prints. The OTLP export, to a stand-in collector on 127.0.0.1 that refuses its first batch,
delivers every record once, in order, and resumes from the cursor kept in the store.
"""

from __future__ import annotations

import json
import os
import signal
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from host.observers.export import AuditExport, export_line
from host.store import Store, open_store
from host.store.records import ENDED, AuditRecord
from support import noting
from support.modern import Mcp, call
from support.noting import HANDLERS, YES
from support.servers import Server, free_port, host_serve
from support.waiting import wait_until
from support.wire import Served

pytestmark = pytest.mark.served

SPECS = noting.specs("exported")


@pytest.fixture(scope="module")
def serving(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Server, Path]]:
    tmp_path = tmp_path_factory.mktemp("export")
    for name, file, text in (("specs", "note.yaml", SPECS), ("handlers", "n.py", HANDLERS)):
        (tmp_path / name).mkdir()
        (tmp_path / name / file).write_text(text)
    export = tmp_path / "export" / "audit.jsonl"
    with host_serve(
        tmp_path, "host", "--workers", "2", specs=tmp_path / "specs",
        HOST_AUDIT_EXPORT=f"file:{export}", HOST_AUDIT_EXPORT_MAX="6000",
    ) as server:  # fmt: skip
        yield server, export


def noted(server: Server, word: str) -> int:
    first = call(server.connect(), "note", {"word": word})
    params = {"name": "note", "arguments": {"word": word}, "inputResponses": YES,
              "requestState": first["requestState"]}  # fmt: skip
    return int(Mcp(Served(server.connect())).request("tools/call", params).status_code)


def lag(server: Server) -> float:
    conn = server.connect()
    conn.request("GET", "/metrics")
    text = conn.getresponse().read().decode()
    found = [line.split()[-1] for line in text.splitlines()
             if line.startswith("host_audit_export_lag ")]  # fmt: skip
    return float(found[0]) if found else 0.0


def exported(export: Path) -> list[dict[str, Any]]:
    """Every exported line: the rotated files in their order, then the current one."""
    files = sorted(p for p in export.parent.glob(export.name + ".*") if p.suffix[1:].isdigit())
    lines = []
    for path in [*files, export]:
        if path.exists():
            lines += [json.loads(line) for line in path.read_text().splitlines()]
    return lines


def trail(store: Store) -> list[dict[str, Any]]:
    entries, after = [], 0
    while page := store.audit_entries(after=after, limit=500):
        entries += [json.loads(export_line(body, hash_)) for _, body, hash_ in page]
        after = page[-1][0]
    return entries


def test_the_export_file_is_the_trail_after_faults(
    serving: tuple[Server, Path], tmp_path: Path
) -> None:
    server, export = serving
    assert [noted(server, f"before-{n}") for n in range(6)] == [200] * 6
    assert wait_until(lambda: len(exported(export)) >= 6, 15)

    # The export's folder cannot be written for a while: calls go on, undelayed.
    aside = export.parent.with_name("aside")
    export.parent.rename(aside)
    export.parent.write_text("not a folder")
    try:
        assert [noted(server, f"blocked-{n}") for n in range(4)] == [200] * 4
        assert wait_until(lambda: lag(server) >= 4, 10)  # behind, and shown
        conn = server.connect()
        conn.request("GET", "/readyz")
        assert conn.getresponse().status == 200  # the export is not the host's readiness
    finally:
        export.parent.unlink()
        aside.rename(export.parent)

    # A worker killed while calls run (and its export thread with it, maybe mid-batch).
    stop = threading.Event()
    statuses: list[int] = []

    def calling() -> None:
        n = 0
        while not stop.is_set():
            try:
                statuses.append(noted(server, f"during-{n}"))
            except OSError:
                statuses.append(0)
            n += 1

    caller = threading.Thread(target=calling)
    caller.start()
    children = Path(f"/proc/{server.pid}/task/{server.pid}/children").read_text().split()
    wait_until(lambda: len(statuses) >= 3, 10)
    os.kill(int(children[0]), signal.SIGKILL)
    wait_until(lambda: len(statuses) >= 10, 20)
    stop.set()
    caller.join(30)
    assert [noted(server, f"after-{n}") for n in range(3)] == [200] * 3

    store = open_store(f"sqlite:///{server.log.parent / 'host' / 'store.db'}")
    try:
        assert wait_until(lambda: exported(export) == trail(store), 20)
        lines = exported(export)
    finally:
        store.close()
    seqs = [line["seq"] for line in lines]
    assert seqs == list(range(1, len(seqs) + 1))  # no gap, no duplicate
    assert len(list(export.parent.glob(export.name + ".0*"))) >= 1  # rotated by size
    words = {line.get("arguments", {}).get("word") for line in lines}
    assert {f"blocked-{n}" for n in range(4)} <= words


class Collector:
    """An OTLP/HTTP logs collector stand-in: refuses its first ``refuse`` posts with 400."""

    def __init__(self, refuse: int) -> None:
        from opentelemetry.proto.collector.logs.v1.logs_service_pb2 import (
            ExportLogsServiceRequest,
        )

        self.taken: list[dict[str, Any]] = []
        self.posts = 0
        collector = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers["Content-Length"]))
                collector.posts += 1
                if collector.posts <= refuse:
                    self.send_response(400)
                    self.end_headers()
                    return
                request = ExportLogsServiceRequest()
                request.ParseFromString(body)
                for resource in request.resource_logs:
                    for scope in resource.scope_logs:
                        collector.taken += [
                            json.loads(r.body.string_value) for r in scope.log_records
                        ]
                self.send_response(200)
                self.send_header("Content-Type", "application/x-protobuf")
                self.end_headers()

            def log_message(self, *args: Any) -> None:
                pass

        self.port = free_port()
        self.server = ThreadingHTTPServer(("127.0.0.1", self.port), Handler)
        threading.Thread(target=self.server.serve_forever, daemon=True).start()


def test_the_otlp_export_reaches_a_collector_once_in_order(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from host.observers.export_otlp import OtlpSink

    collector = Collector(refuse=1)
    endpoint = f"http://127.0.0.1:{collector.port}/v1/logs"
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_LOGS_ENDPOINT", endpoint)
    store = open_store(f"sqlite:///{tmp_path / 'store.db'}")
    try:
        for n in range(7):
            record = AuditRecord(f"c{n}", 1.8e9 + n, "alice", "note", "acted")
            store.write_audits([(record, ENDED)], keep_s=3600)
        export = AuditExport(store, OtlpSink(store), batch=3)
        with pytest.raises(OSError, match="did not take"):
            export.once()  # refused: nothing counts as sent
        assert export.once() == 7
        store.write_audits(
            [(AuditRecord("c7", 1.8e9 + 7, "bob", "note", "acted"), ENDED)], keep_s=3600
        )
        again = AuditExport(store, OtlpSink(store))  # another process: the cursor is the store's
        assert again.once() == 1
        expected = trail(store)
    finally:
        store.close()
        collector.server.shutdown()
    assert collector.taken == expected
    assert [r["seq"] for r in collector.taken] == list(range(1, 9))
