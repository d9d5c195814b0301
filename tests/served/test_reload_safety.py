"""Reloads never kill the host: a handler module that exits, crashes or hangs at import is refused.

A real ``host serve`` with two workers serves a copy of the help desk; its handler module is
changed on disk to do something that would end the process importing it, then the master gets
SIGHUP. The master imports the handlers in a child process first, so each reload is refused
(``reload_refused`` in the log, with the reason), and the same two workers go on answering. At
start-up, a module that raises ``SystemExit`` is one clear error line and exit status 1.
"""

from __future__ import annotations

import http.client
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from support.helpdesk import copy_helpdesk
from support.modern import call
from support.paths import ROOT
from support.servers import Server, clean_env, host_serve
from support.waiting import wait_until
from support.workers import connections_on_two_workers, worker_of

pytestmark = pytest.mark.served

HAZARDS = {
    "SystemExit": "raise SystemExit(3)\n",
    "KeyboardInterrupt": "raise KeyboardInterrupt\n",
    "os._exit": "import os\nos._exit(7)\n",
    "segfault": "import ctypes\nctypes.string_at(0)\n",
}

HANG = "import time\ntime.sleep(600)\n"


def _refused(server: Server) -> list[str]:
    return [line["reason"] for line in server.log_lines("reload_refused")]


def _same_workers_answer(server: Server, workers: set[int]) -> None:
    for conn in (server.connect(), server.connect()):
        call(conn, "list_outbox", {})
        assert worker_of(server, conn) in workers


def _two_workers(server: Server) -> set[int]:
    return {worker_of(server, conn) for conn in connections_on_two_workers(server)}


def _refuse(server: Server, handler: Path, original: str, hazard: str, count: int) -> str:
    """Put ``hazard`` at the end of the handler module, SIGHUP, and return the refusal's reason."""
    handler.write_text(original + "\n" + hazard)
    os.kill(server.pid, signal.SIGHUP)
    assert wait_until(lambda: len(_refused(server)) >= count, timeout_s=60), server.log.read_text()
    return _refused(server)[count - 1]


def test_a_handler_that_ends_its_importer_is_refused_and_the_old_workers_serve(
    tmp_path: Path,
) -> None:
    specs = copy_helpdesk(tmp_path)
    handler = specs.parent / "handlers" / "helpdesk.py"
    original = handler.read_text()
    with host_serve(tmp_path, "host", "--workers", "2", "--threads", "4", specs=specs) as server:
        workers = _two_workers(server)
        assert len(workers) == 2
        for count, (name, hazard) in enumerate(HAZARDS.items(), start=1):
            reason = _refuse(server, handler, original, hazard, count)
            assert reason, name
            assert server.log_lines("specs_reloaded") == [], name
            _same_workers_answer(server, workers)
        reasons = _refused(server)
        assert "SystemExit" in reasons[0]
        assert "exit status 7" in reasons[2]
        assert "SIGSEGV" in reasons[3]

        # The module fixed, the next reload is served by new workers.
        handler.write_text(original)
        os.kill(server.pid, signal.SIGHUP)
        assert wait_until(lambda: bool(server.log_lines("specs_reloaded")), timeout_s=60)


def test_a_handler_that_hangs_at_import_is_refused_after_the_time_limit(tmp_path: Path) -> None:
    specs = copy_helpdesk(tmp_path)
    handler = specs.parent / "handlers" / "helpdesk.py"
    original = handler.read_text()
    with host_serve(
        tmp_path, "host", "--workers", "2", "--threads", "4", specs=specs,
        HOST_RELOAD_IMPORT_TIMEOUT="3s",
    ) as server:  # fmt: skip
        workers = _two_workers(server)
        reason = _refuse(server, handler, original, HANG, 1)
        assert "did not finish within 3 s" in reason
        _same_workers_answer(server, workers)
        # gunicorn's own timeout would have killed a master stuck that long; it is answering.
        conn = http.client.HTTPConnection("127.0.0.1", server.port, timeout=10)
        conn.request("GET", "/readyz")
        assert conn.getresponse().status == 200


def test_a_handler_that_raises_system_exit_at_start_is_one_clear_error(tmp_path: Path) -> None:
    specs = copy_helpdesk(tmp_path)
    handler = specs.parent / "handlers" / "helpdesk.py"
    handler.write_text(handler.read_text() + "\nraise SystemExit(3)\n")
    done = subprocess.run(
        [sys.executable, "-m", "host", "serve", "--specs", str(specs), "--bind", "127.0.0.1:0"],
        capture_output=True, text=True, timeout=60, cwd=tmp_path,
        env=clean_env(HOST_DATA_DIR=str(tmp_path / "data"), PYTHONPATH=str(ROOT)),
    )  # fmt: skip
    assert done.returncode == 1, done
    assert "Traceback" not in done.stderr
    assert "host: not serving: " in done.stderr
    assert "SystemExit" in done.stderr


def test_a_time_limit_that_is_not_a_duration_is_refused_at_start(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "host", "serve", "--specs", str(ROOT / "specs"),
         "--bind", "127.0.0.1:0"],
        capture_output=True, text=True, timeout=60, cwd=tmp_path,
        env=clean_env(HOST_DATA_DIR=str(tmp_path / "data"), HOST_RELOAD_IMPORT_TIMEOUT="5"),
    )  # fmt: skip
    assert done.returncode == 1, done
    assert "host: not serving: HOST_RELOAD_IMPORT_TIMEOUT: '5' is not a duration" in done.stderr
