"""Reloads that never take the host down: ``kill -HUP`` and ``host serve --reload``, under load.

A real ``host serve`` with two workers serves a copy of the help desk while clients poll it
several times a second, modern and legacy, on kept-alive connections. A good reload (a new spec,
and a new function in an already imported handler module) is served by new workers; a bad one
(a spec with an error) is refused with its diagnostics in the log while the old specs keep
serving. Not one request fails in between, and a legacy session listening on its GET stream is
told that the tool list changed.
"""

from __future__ import annotations

import http.client
import os
import signal
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from support.helpdesk import copy_helpdesk
from support.legacy import LegacyHttp, Listener
from support.modern import call, modern_tools
from support.servers import Server, host_serve
from support.waiting import wait_until

pytestmark = pytest.mark.served

PONG_SPEC = """\
kind: tool
name: pong
description: Answers pong.
annotations: {readOnlyHint: true}
input: {}
steps:
  - act: helpdesk:pong
"""

PONG_HANDLER = """

def pong():
    return {"pong": True}
"""

BROKEN_SPEC = """\
kind: tool
name: broken
description: Misspells a key.
stepz: []
"""


class Pollers:
    """Threads that send requests until stopped, counting every one and every failure."""

    def __init__(self, server: Server) -> None:
        self.server = server
        self.sent = 0
        self.failures: list[str] = []
        self._stop = threading.Event()
        self._lock = threading.Lock()
        legacy = LegacyHttp(server)
        jobs: list[Callable[[http.client.HTTPConnection], Any]] = [
            lambda conn: call(conn, "list_outbox", {}),
            modern_tools,
            lambda conn: legacy.request("tools/list", conn=conn),
            lambda conn: legacy.request("ping", conn=conn),
        ]
        self._threads = [
            threading.Thread(target=self._run, args=(job,), daemon=True) for job in jobs
        ]
        for thread in self._threads:
            thread.start()

    def _run(self, job: Callable[[http.client.HTTPConnection], Any]) -> None:
        conn = self.server.connect()
        deadline = time.monotonic() + 120
        while not self._stop.is_set() and time.monotonic() < deadline:
            try:
                try:
                    job(conn)
                except (http.client.RemoteDisconnected, ConnectionResetError, BrokenPipeError):
                    # NOTE: an old worker closes its idle kept-alive connections when a reload
                    # retires it; a request sent on one at that moment never reached it, and
                    # HTTP clients (urllib3, httpx) send it again on a new connection, as here.
                    # Anything that fails on the new connection counts.
                    conn.close()
                    conn = self.server.connect()
                    job(conn)
            except (AssertionError, OSError, http.client.HTTPException, ValueError) as exc:
                with self._lock:
                    self.failures.append(f"{type(exc).__name__}: {exc}")
                conn.close()
            with self._lock:
                self.sent += 1
            time.sleep(0.1)

    def stop(self) -> None:
        self._stop.set()
        for thread in self._threads:
            thread.join(timeout=30)


def reload_refused(server: Server) -> list[dict[str, Any]]:
    return server.log_lines("reload_refused")


def worker_pids(server: Server) -> set[int]:
    return {line["pid"] for line in server.calls()[-8:]}


@pytest.fixture
def site(tmp_path: Path) -> Path:
    return copy_helpdesk(tmp_path)


def test_good_and_bad_reloads_under_load_fail_no_request(tmp_path: Path, site: Path) -> None:
    with host_serve(tmp_path, "host", "--workers", "2", specs=site) as server:
        listening = LegacyHttp(server)
        assert listening.initialized["capabilities"]["tools"] == {"listChanged": True}
        assert "pong" not in listening.tools()
        listener = Listener(listening)
        assert wait_until(lambda: listener.opened >= 1)
        pollers = Pollers(server)
        try:
            time.sleep(1.5)  # the scenario: load on the old workers before a reload
            before = worker_pids(server)

            # A bad reload: refused, with its diagnostics in the log; the old specs serve on.
            (site / "broken.yaml").write_text(BROKEN_SPEC)
            os.kill(server.pid, signal.SIGHUP)
            assert wait_until(lambda: bool(reload_refused(server)))
            refused = reload_refused(server)[0]
            assert refused["level"] == "error"
            assert any(f"{site / 'broken.yaml'}:4:1: error:" in d for d in refused["diagnostics"])
            time.sleep(1.5)  # the scenario: the old specs serve on after the refusal
            assert "broken" not in modern_tools(server.connect())
            (site / "broken.yaml").unlink()

            # A good reload: a new tool, whose handler is new in an imported module.
            with (site.parent / "handlers" / "helpdesk.py").open("a") as handler:
                handler.write(PONG_HANDLER)
            (site / "pong.yaml").write_text(PONG_SPEC)
            os.kill(server.pid, signal.SIGHUP)
            assert wait_until(lambda: "pong" in modern_tools(server.connect()))
            assert call(server.connect(), "pong", {})["structuredContent"] == {"pong": True}
            assert wait_until(lambda: len(server.log_lines("specs_reloaded")) == 1)
            time.sleep(1.5)  # the scenario: load on the new workers
            # NOTE: a retiring worker still answers on the kept-alive connection it holds until
            # it exits, which on a busy machine can take seconds: until then, the last calls are
            # not all the new workers'.
            wait_until(lambda: worker_pids(server).isdisjoint(before), 30)
        finally:
            pollers.stop()
        assert pollers.failures == [], pollers.failures
        assert pollers.sent > 50
        # The session listening on its GET stream heard of the change from a new worker.
        assert wait_until(lambda: "notifications/tools/list_changed" in listener.methods())
        listener.stop()
        assert listener.opened >= 2
        assert worker_pids(server).isdisjoint(before)
        assert "pong" in listening.tools()


def test_serve_reload_watches_specs_and_handlers(tmp_path: Path, site: Path) -> None:
    with host_serve(tmp_path, "host", "--workers", "2", "--reload", specs=site) as server:
        conn = server.connect()
        (site / "broken.yaml").write_text(BROKEN_SPEC)
        assert wait_until(lambda: bool(reload_refused(server)))
        assert "list_outbox" in modern_tools(conn)
        (site / "broken.yaml").unlink()
        with (site.parent / "handlers" / "helpdesk.py").open("a") as handler:
            handler.write(PONG_HANDLER)
        (site / "pong.yaml").write_text(PONG_SPEC)
        assert wait_until(lambda: "pong" in modern_tools(server.connect()))
        assert call(server.connect(), "pong", {})["structuredContent"] == {"pong": True}
        # The broken spec never reached a worker.
        assert "Worker failed to boot" not in server.log.read_text()


def test_forget_handlers_reimports_the_handlers_and_their_siblings_only(tmp_path: Path) -> None:
    import sys

    from host.machine.bind import forget_handlers, load_handler

    handlers = tmp_path / "handlers"
    handlers.mkdir()
    (handlers / "desk.py").write_text("import helper\n\ndef answer():\n    return helper.VALUE\n")
    (handlers / "helper.py").write_text("VALUE = 1\n")
    first = load_handler(handlers, "desk:answer")
    assert first({}, None) == 1
    (handlers / "helper.py").write_text("VALUE = 22\n")  # another size: no stale bytecode
    dropped = forget_handlers(handlers)
    assert "helper" in dropped and any(name.endswith(".desk") for name in dropped)
    assert "host.machine.bind" in sys.modules and "host" not in dropped
    assert load_handler(handlers, "desk:answer")({}, None) == 22
    # What was loaded before keeps working as it was.
    assert first({}, None) == 1
