"""Which gunicorn worker of a served host holds a connection, and two connections on two workers."""

from __future__ import annotations

import http.client
import os
import signal
from typing import Any

from support.modern import call
from support.servers import Server
from support.waiting import wait_until

__all__ = ["connections_on_two_workers", "worker_of"]


def worker_of(
    server: Server,
    conn: http.client.HTTPConnection,
    tool: str = "list_outbox",
    arguments: dict[str, Any] | None = None,
) -> int:
    """The pid of the worker holding ``conn`` (a call of ``tool``, then its log line).

    NOTE: ``list_outbox`` acts, so it needs a store that takes writes; ``service_status`` (no
    act) finds the worker while the store refuses them.
    """
    before = len(server.calls())
    call(conn, tool, arguments or {})
    wait_until(lambda: len(server.calls()) > before, 5, 0.02)
    pid: int = server.calls()[-1]["pid"]
    return pid


def connections_on_two_workers(
    server: Server, tool: str = "list_outbox", arguments: dict[str, Any] | None = None
) -> tuple[http.client.HTTPConnection, http.client.HTTPConnection]:
    """Two kept-alive connections held by two different worker processes.

    NOTE: an idle gunicorn may hand every new connection to the same worker. Pausing the worker
    that holds the first connection (SIGSTOP) while the second one is opened and used leaves the
    accept to the other worker, every time.
    """
    first = server.connect()
    home = worker_of(server, first, tool, arguments)
    other = server.connect()
    os.kill(home, signal.SIGSTOP)
    try:
        elsewhere = worker_of(server, other, tool, arguments)
    finally:
        os.kill(home, signal.SIGCONT)
    assert elsewhere != home
    return first, other
