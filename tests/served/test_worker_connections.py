"""A worker's thread serves its connection's next request itself, when it comes at once.

A kept-alive connection's next request used to go back through the worker's main loop every
time: the poller, a pipe, a callback, a queue, then a thread again. ``host serve``'s worker keeps
the connection on the thread that served it for a few milliseconds (its turn given away), and
serves the next request there if it comes; a quiet connection goes back to the poller as before.
These are the ways that could go wrong: a connection whose next request comes late must still
be served, a lingering thread must not hold up other connections when threads are few, and a
connection closed while its thread waits on it must cost nothing.
"""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from host.serve.worker import LINGER_S
from support.modern import call
from support.servers import host_serve

pytestmark = pytest.mark.served

# NOTE: a liveness bound for a loaded CI machine, not a timing target.
PROMPT_S = 5.0


def test_requests_at_once_and_after_a_pause_on_one_connection(tmp_path: Path) -> None:
    with host_serve(tmp_path, "host", "--workers", "1") as server:
        conn = server.connect()
        for pause in (0.0, 0.0, LINGER_S * 20, 0.0, LINGER_S * 40):
            time.sleep(pause)  # NOTE: past the linger, the poller has the connection again
            result = call(conn, "list_outbox", {})
            assert result["structuredContent"] == {"emails": []}
        conn.close()


def test_one_thread_takes_turns_between_two_busy_connections(tmp_path: Path) -> None:
    with host_serve(tmp_path, "host", "--workers", "1", "--threads", "1") as server:
        first, second = server.connect(), server.connect()
        for conn in (first, second):
            conn.timeout = PROMPT_S
        began = time.monotonic()
        for _ in range(10):
            for conn in (first, second):
                assert not call(conn, "list_outbox", {}).get("isError")
        took = time.monotonic() - began
        assert took < PROMPT_S, f"20 calls over two connections took {took:.1f} s"
        first.close()
        second.close()


def test_a_connection_closed_while_its_thread_waits_on_it(tmp_path: Path) -> None:
    with host_serve(tmp_path, "host", "--workers", "1", "--threads", "2") as server:
        for _ in range(20):
            conn = server.connect()
            assert not call(conn, "list_outbox", {}).get("isError")
            conn.close()  # NOTE: at once: its thread is still waiting for a next request
        # Every thread is free again: two more connections at once are both served.
        held = [server.connect(), server.connect()]
        for conn in held:
            conn.timeout = PROMPT_S
            assert not call(conn, "list_outbox", {}).get("isError")
            conn.close()
