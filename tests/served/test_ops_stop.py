"""A stop or a reload is prompt while clients keep idle connections alive, as every client does.

gunicorn's gthread worker waited out its whole graceful timeout (10 s) on a kept-alive idle
connection before it left: every shutdown and every reload of a host with a client took 10 s,
and a supervisor that stops services in sequence paid it each time. ``host serve``'s worker closes
idle connections as soon as it is told to stop; a request in flight still finishes.
"""

from __future__ import annotations

import json
import os
import signal
import time
from pathlib import Path

import pytest

from support.helpdesk import copy_helpdesk
from support.modern import Mcp, call
from support.servers import alive, host_serve
from support.waiting import wait_until
from support.wire import Served
from support.workers import connections_on_two_workers, worker_of

pytestmark = pytest.mark.served

# NOTE: well under the graceful timeout (10 s) that the workers used to wait out; a loaded CI
# machine needs a few seconds to stop two workers and the master.
PROMPT_S = 5.0


def test_a_stop_with_idle_kept_alive_connections_is_prompt(tmp_path: Path) -> None:
    with host_serve(tmp_path, "host", "--workers", "2") as server:
        first, other = connections_on_two_workers(server)  # idle now, and kept alive
        began = time.monotonic()
        os.kill(server.pid, signal.SIGTERM)
        assert wait_until(lambda: not alive(server.pid), 15, 0.05)
        took = time.monotonic() - began
        assert took < PROMPT_S, f"the host took {took:.1f} s to stop"
        for conn in (first, other):
            conn.close()


def test_a_reload_retires_workers_with_idle_connections_at_once(tmp_path: Path) -> None:
    site = copy_helpdesk(tmp_path)
    with host_serve(tmp_path, "host", "--workers", "2", specs=site) as server:
        first, other = connections_on_two_workers(server)
        old = {worker_of(server, first), worker_of(server, other)}
        began = time.monotonic()
        os.kill(server.pid, signal.SIGHUP)
        assert wait_until(lambda: not any(alive(pid) for pid in old), 15, 0.05)
        took = time.monotonic() - began
        assert took < PROMPT_S, f"the old workers took {took:.1f} s to leave"
        # The closed connection is the client's to replace; the new workers serve it.
        fresh = server.connect()
        assert not call(fresh, "list_outbox", {}).get("isError")
        for conn in (first, other, fresh):
            conn.close()


def test_a_call_in_flight_when_the_stop_comes_still_gets_its_answer(tmp_path: Path) -> None:
    with host_serve(tmp_path, "host", "--workers", "1") as server:
        master = server.pid
        conn = server.connect()
        mcp = Mcp(Served(conn))
        params = {"name": "list_outbox", "arguments": {}, "_meta": mcp.meta()}
        body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": params})
        # NOTE: a request on its way (headers sent, body not yet) when SIGTERM arrives: the
        # worker has it in hand, not idle, and answers it before it leaves.
        conn.putrequest("POST", "/mcp")
        headers = {**mcp.headers("tools/call", "list_outbox"), "Content-Type": "application/json"}
        for name, value in {**headers, "Content-Length": str(len(body))}.items():
            conn.putheader(name, value)
        conn.endheaders()
        time.sleep(0.5)  # the worker's thread is reading it now
        os.kill(master, signal.SIGTERM)
        time.sleep(0.5)
        conn.send(body.encode())
        reply = conn.getresponse()
        assert reply.status == 200
        result = json.loads(reply.read())["result"]
        assert result["content"] and not result.get("isError")
        assert wait_until(lambda: not alive(server.pid), 15, 0.05)
