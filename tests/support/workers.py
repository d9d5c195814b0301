"""Which gunicorn worker of a served host holds a connection, and two connections on two workers."""

from __future__ import annotations

import http.client
import os
import signal

from support.modern import call
from support.servers import Server
from support.waiting import wait_until

__all__ = ["connections_on_two_workers", "worker_of"]


def worker_of(server: Server, conn: http.client.HTTPConnection) -> int:
    """The pid of the worker holding ``conn`` (a read-only help-desk call, then its log line)."""
    before = len(server.calls())
    call(conn, "list_outbox", {})
    wait_until(lambda: len(server.calls()) > before, 5, 0.02)
    pid: int = server.calls()[-1]["pid"]
    return pid


def connections_on_two_workers(
    server: Server,
) -> tuple[http.client.HTTPConnection, http.client.HTTPConnection]:
    """Two kept-alive connections held by two different worker processes.

    NOTE: an idle gunicorn may hand every new connection to the same worker. Pausing the worker
    that holds the first connection (SIGSTOP) while the second one is opened and used leaves the
    accept to the other worker, every time.
    """
    first = server.connect()
    home = worker_of(server, first)
    other = server.connect()
    os.kill(home, signal.SIGSTOP)
    try:
        elsewhere = worker_of(server, other)
    finally:
        os.kill(home, signal.SIGCONT)
    assert elsewhere != home
    return first, other
