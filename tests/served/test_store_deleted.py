"""The SQLite store's file deleted or made unwritable under a real ``host serve``.

Deleted while serving: both workers' ``/readyz`` say so at once, and a final round retried then
does not act. Then one worker is killed: before, gunicorn's replacement created a new, empty file
and served from it, so retried final rounds of finished calls acted again there (2 of 60). Now the
replacement refuses to start, which stops the host with the reason, and nothing acts again.

Made unwritable: ``/readyz`` says so. Root ignores file modes, so as root the file is made
immutable instead (``FS_IOC_SETFLAGS``, which root obeys); where that is not possible the test is
skipped.
"""

from __future__ import annotations

import array
import fcntl
import http.client
import json
import os
import signal
import sqlite3
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from support.modern import call
from support.servers import Server, host_serve
from support.wire import HEADERS
from support.workers import connections_on_two_workers

pytestmark = pytest.mark.served

FS_IOC_GETFLAGS = 0x80086601
FS_IOC_SETFLAGS = 0x40086602
FS_IMMUTABLE_FL = 0x10
CALLS = 60


def probe(conn: http.client.HTTPConnection) -> tuple[int, dict[str, Any]]:
    conn.request("GET", "/readyz")
    response = conn.getresponse()
    return response.status, json.loads(response.read())


def emails(data: Path) -> int:
    with sqlite3.connect(data / "helpdesk.db") as db:
        return int(db.execute("SELECT count(*) FROM outbox").fetchone()[0])


def final_round(first: dict[str, Any]) -> dict[str, Any]:
    (key,) = first["inputRequests"]
    return {
        "inputResponses": {key: {"action": "accept", "content": {"confirm": True}}},
        "requestState": first["requestState"],
    }


def send_final(
    server: Server, arguments: dict[str, Any], final: dict[str, Any]
) -> tuple[int, dict[str, Any], dict[str, str]]:
    """Send a final round on a new connection: the status, JSON body and (lower-case) headers."""
    params = {
        "name": "close_ticket",
        "arguments": arguments,
        **final,
        "_meta": {
            "io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientCapabilities": {"elicitation": {"form": {}}},
        },
    }
    body = {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": params}
    headers = {
        **HEADERS,
        "MCP-Protocol-Version": "2026-07-28",
        "Mcp-Method": "tools/call",
        "Mcp-Name": "close_ticket",
    }
    conn = http.client.HTTPConnection("127.0.0.1", server.port, timeout=15)
    try:
        conn.request("POST", "/mcp", json.dumps(body), headers)
        response = conn.getresponse()
        found = {name.lower(): value for name, value in response.getheaders()}
        return response.status, json.loads(response.read()), found
    finally:
        conn.close()


def retry(server: Server, arguments: dict[str, Any], final: dict[str, Any]) -> int:
    """Send a final round again; the HTTP status, 0 if none came (the host is stopping)."""
    try:
        return send_final(server, arguments, final)[0]
    except (OSError, ValueError):
        return 0


def workers(server: Server) -> list[int]:
    path = Path(f"/proc/{server.pid}/task/{server.pid}/children")
    try:
        return [int(pid) for pid in path.read_text().split()]
    except OSError:
        return []


def master_alive(server: Server) -> bool:
    try:
        stat = Path(f"/proc/{server.pid}/stat").read_text()
    except OSError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] != "Z"


def test_store_deleted_then_a_worker_restarted_nothing_acts_again(tmp_path: Path) -> None:
    data = tmp_path / "host"
    with host_serve(tmp_path, "host") as server:
        a, b = connections_on_two_workers(server)
        finished = []
        for n in range(CALLS):
            arguments = {"id": f"T-{n % 4 + 1}"}
            first = call(a if n % 2 else b, "close_ticket", arguments)
            final = final_round(first)
            done = call(b if n % 2 else a, "close_ticket", arguments, **final)
            assert done["structuredContent"] == {**arguments, "closed": True}
            finished.append((arguments, final))
        assert emails(data) == CALLS

        for name in ("store.db", "store.db-wal", "store.db-shm"):
            (data / name).unlink(missing_ok=True)
        for conn in (a, b):  # both workers
            status, body = probe(conn)
            assert status == 503 and "deleted" in body["reason"], body
        # A retry now is refused by whichever worker takes it: its claim cannot be written.
        statuses = {retry(server, *done) for done in finished[:10]}
        assert emails(data) == CALLS
        assert 500 not in statuses, statuses

        before = workers(server)
        assert len(before) == 2
        os.kill(before[0], signal.SIGKILL)
        # gunicorn replaces the worker; the replacement finds the store is not the file the
        # host started with, refuses to start, and the host stops.
        deadline = time.monotonic() + 30
        while master_alive(server) and time.monotonic() < deadline:
            for done in finished:
                retry(server, *done)
            time.sleep(0.1)
        assert emails(data) == CALLS, "a finished call acted again"
        assert not master_alive(server), "the host should have stopped"
        log = server.log.read_text()
        assert "the SQLite store is not the file this host started with" in log
        assert "restart host serve" in log


def test_store_file_deleted_readiness_fails_and_acts_are_refused_with_503(tmp_path: Path) -> None:
    with host_serve(tmp_path, "host") as server:
        a, b = connections_on_two_workers(server)
        assert probe(a)[0] == probe(b)[0] == 200
        (tmp_path / "host" / "store.db").unlink()
        for conn in (a, b):
            status, body = probe(conn)
            assert status == 503, body
            assert body["status"] == "unavailable"
            assert "was deleted while it was open" in body["reason"]
            # A new call's final round cannot claim its act: 503, not a 500, and no act.
            arguments = {"id": "T-2"}
            first = call(conn, "close_ticket", arguments)
            status, reply, headers = send_final(server, arguments, final_round(first))
            assert status == 503, reply
            assert headers.get("retry-after") == "5", headers
            assert "store cannot be used now" in reply["error"]["message"]
            assert str(tmp_path) not in json.dumps(reply)  # the reason stays in the log
        assert emails(tmp_path / "host") == 0
        (line, *_) = server.wait_for("store_unavailable", 2)
        assert "deleted" in line["reason"]


@contextmanager
def unwritable(path: Path) -> Iterator[None]:
    """``path`` cannot be written by this user (as root: immutable) until the block ends."""
    if os.geteuid() != 0:
        mode = path.stat().st_mode
        path.chmod(0o400)
        try:
            yield
        finally:
            path.chmod(mode)
        return
    fd = os.open(path, os.O_RDONLY)
    try:
        flags = array.array("l", [0])
        try:
            fcntl.ioctl(fd, FS_IOC_GETFLAGS, flags, True)
            fcntl.ioctl(fd, FS_IOC_SETFLAGS, array.array("l", [flags[0] | FS_IMMUTABLE_FL]))
        except OSError as exc:
            pytest.skip(f"cannot make a file immutable here (root ignores file modes): {exc}")
        try:
            yield
        finally:
            fcntl.ioctl(fd, FS_IOC_SETFLAGS, flags)
    finally:
        os.close(fd)


def test_readiness_says_when_the_store_file_cannot_be_written(tmp_path: Path) -> None:
    with host_serve(tmp_path, "host") as server:
        a, b = connections_on_two_workers(server)
        assert probe(a)[0] == probe(b)[0] == 200
        with unwritable(tmp_path / "host" / "store.db"):
            for conn in (a, b):
                status, body = probe(conn)
                assert status == 503, body
                assert "cannot be written" in body["reason"], body
        for conn in (a, b):
            assert probe(conn)[0] == 200
