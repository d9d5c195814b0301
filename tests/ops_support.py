"""Helpers for the operations tests: a copy of the help desk to edit, and a legacy client over HTTP.

Not a test module: ``from ops_support import ...``.
"""

from __future__ import annotations

import http.client
import json
import shutil
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from servers import ROOT, Server, send

__all__ = ["LegacyHttp", "Listener", "copy_helpdesk", "modern_tools", "poll"]


def copy_helpdesk(tmp_path: Path) -> Path:
    """The help desk's specs and handlers copied to ``tmp_path/site``; its spec folder."""
    site = tmp_path / "site"
    shutil.copytree(ROOT / "specs", site / "specs")
    shutil.copytree(ROOT / "handlers", site / "handlers", ignore=shutil.ignore_patterns("__py*"))
    return site / "specs"


def modern_tools(conn: http.client.HTTPConnection) -> list[str]:
    """The tool names a modern ``tools/list`` shows."""
    meta = {
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {},
    }
    body = {"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {"_meta": meta}}
    response = send(
        conn, body, **{"MCP-Protocol-Version": "2026-07-28", "Mcp-Method": "tools/list"}
    )
    payload = json.loads(response.read())
    assert response.status == 200, payload
    return [tool["name"] for tool in payload["result"]["tools"]]


class LegacyHttp:
    """A legacy session over HTTP: ``initialize``, then requests with its session id."""

    def __init__(self, server: Server, capabilities: dict[str, Any] | None = None) -> None:
        self.server = server
        body = {
            "jsonrpc": "2.0",
            "id": 0,
            "method": "initialize",
            "params": {"protocolVersion": "2025-11-25", "capabilities": capabilities or {}},
        }
        response = send(server.connect(), body)
        self.initialized = json.loads(response.read())["result"]
        self.session = response.getheader("Mcp-Session-Id") or ""
        assert self.session

    def request(
        self,
        method: str,
        params: dict[str, Any] | None = None,
        conn: http.client.HTTPConnection | None = None,
    ) -> dict[str, Any]:
        """One request of the session (on ``conn``, or a new connection); the response."""
        body = {"jsonrpc": "2.0", "id": 1, "method": method, "params": params or {}}
        response = send(conn or self.server.connect(), body, **{"Mcp-Session-Id": self.session})
        payload: dict[str, Any] = json.loads(response.read())
        assert response.status == 200, payload
        return payload

    def tools(self) -> list[str]:
        """The tool names the session's ``tools/list`` shows."""
        return [tool["name"] for tool in self.request("tools/list")["result"]["tools"]]


class Listener:
    """A legacy session's GET stream, read on a thread, reopened when the server ends it.

    Attributes:
        messages: Every JSON-RPC message received, in order.
        opened: How many times the stream was opened with HTTP 200.
    """

    def __init__(self, client: LegacyHttp, deadline_s: float = 120.0) -> None:
        self.client = client
        self.messages: list[dict[str, Any]] = []
        self.opened = 0
        self.statuses: list[int] = []
        self._stop = threading.Event()
        self._deadline = time.monotonic() + deadline_s
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while not self._stop.is_set() and time.monotonic() < self._deadline:
            # NOTE: longer than the server's 15 s between keep-alives.
            conn = http.client.HTTPConnection("127.0.0.1", self.client.server.port, timeout=60)
            try:
                conn.request(
                    "GET",
                    "/mcp",
                    headers={"Accept": "text/event-stream", "Mcp-Session-Id": self.client.session},
                )
                response = conn.getresponse()
                self.statuses.append(response.status)
                if response.status != 200:
                    response.read()
                    time.sleep(0.5)
                    continue
                self.opened += 1
                while not self._stop.is_set() and (line := response.readline()):
                    if line.startswith(b"data: "):
                        self.messages.append(json.loads(line[len(b"data: ") :]))
            except OSError:
                time.sleep(0.2)
            finally:
                conn.close()
            time.sleep(0.2)  # as SDK clients do, a moment before reconnecting

    def methods(self) -> list[str]:
        """The methods of the messages received so far."""
        return [m.get("method", "") for m in self.messages]

    def stop(self) -> None:
        """Stop listening (the thread ends within its next read or reconnect)."""
        self._stop.set()


def poll(what: Callable[[], bool], timeout_s: float = 30.0, every_s: float = 0.1) -> bool:
    """Whether ``what()`` became true within ``timeout_s``."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if what():
            return True
        time.sleep(every_s)
    return what()
