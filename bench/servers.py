"""Start, probe, measure and always stop the servers under test, on 127.0.0.1 only.

Every server runs in its own process group, optionally pinned to a set of CPUs (the equivalent of
``taskset -c``), and :class:`Server` kills the whole group on every exit path: normal return,
exception, KeyboardInterrupt, and (through :func:`kill_all`, which ``bench/run.py`` registers with
``atexit`` and SIGTERM) the benchmark process itself being stopped. If the benchmark is killed
outright, the kernel kills each server's main process too (``PR_SET_PDEATHSIG``), and gunicorn's
workers leave when their master is gone.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from types import TracebackType

__all__ = [
    "ALL_CPUS",
    "BIN",
    "GUNICORN_THREADS",
    "ROOT",
    "Server",
    "ServerError",
    "bytecode_under",
    "check_imported",
    "cpu_seconds",
    "free_port",
    "gunicorn_cmd",
    "host_env",
    "imported_from",
    "kill_all",
    "rss_mb",
    "uvicorn_cmd",
    "worker_pids",
]

ROOT = Path(__file__).resolve().parent.parent
BIN = Path(sys.executable).parent
# NOTE: ``host serve``'s own settings (gthread, its threads per worker, keep-alive 5 s): gunicorn's
# sync worker would close the connection after every response. Host and ceiling always share them.
GUNICORN_THREADS = 1024
# NOTE: taken at import, before the benchmark pins itself, so an unpinned server gets every CPU.
ALL_CPUS = frozenset(os.sched_getaffinity(0))
_LIVE: dict[int, subprocess.Popen[bytes]] = {}
_HANDED_OUT: set[int] = set()
_TICK = os.sysconf("SC_CLK_TCK")
_PR_SET_PDEATHSIG = 1


def _die_with_parent() -> None:
    """In the child: be killed when the benchmark dies, even by SIGKILL (Linux only)."""
    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL(None).prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)


class ServerError(RuntimeError):
    """A server under test did not start, or died."""


def free_port() -> int:
    """A TCP port on 127.0.0.1 that is free right now, and not handed out before in this run.

    NOTE: every server's port is chosen before the first one starts, and the kernel may give
    a port it just gave again: a second server on it failed to bind, and its load was answered
    by the first one, figures and all.
    """
    while True:
        with socket.socket() as sock:
            sock.bind(("127.0.0.1", 0))
            port: int = sock.getsockname()[1]
        if port not in _HANDED_OUT:
            _HANDED_OUT.add(port)
            return port


def gunicorn_cmd(
    app: str, port: int, workers: int = 1, threads: int = GUNICORN_THREADS, parser: str = "auto"
) -> list[str]:
    """The gunicorn command line the benchmark uses for the host and the ceiling alike.

    Every setting is ``host serve``'s (:func:`host.serve.start.gunicorn_flags`, the one owner):
    a copy kept here drifted once, and without ``host serve``'s ``--worker-connections`` gthread
    closed every connection after its response. ``parser`` is gunicorn's ``--http-parser``:
    ``auto`` takes the C parser (``gunicorn_h1c``, the ``gunicorn[fast]`` extra) when it is
    installed, ``python`` never does.
    """
    from host.serve.start import ServeOptions, gunicorn_flags

    options = ServeOptions(bind=f"127.0.0.1:{port}", workers=workers, threads=threads)
    return [
        str(BIN / "gunicorn"), app, "--http-parser", parser,
        *gunicorn_flags(options), "--log-level", "warning",
    ]  # fmt: skip


def host_env(root: Path, data: Path, secret: str) -> dict[str, str]:
    """The environment a host checkout at ``root`` is served with, its files under ``data``.

    Every ``HOST_`` and ``SDK_BENCH_`` variable of the caller's is dropped: the figures are of
    the example's specs and handlers in ``root``, nothing else.
    """
    env = {k: v for k, v in os.environ.items() if not k.startswith(("HOST_", "SDK_BENCH_"))}
    env.update(
        PYTHONPATH=str(root),
        HOST_SPECS=str(root / "specs"),
        HOST_HANDLERS=str(root / "handlers"),
        HOST_SECRET=secret,
        HOST_DATA_DIR=str(data),
        HOST_STORE=f"sqlite:///{data / 'store.db'}",
        HELPDESK_DB=str(data / "helpdesk.db"),
    )
    return env


def bytecode_under(env: dict[str, str], prefix: Path) -> None:
    """Have a server started with ``env`` write its modules' bytecode under ``prefix``.

    Each module's goes at its source's absolute folder, so :func:`imported_from` can say where
    the server imported the host from.
    """
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    env["PYTHONPYCACHEPREFIX"] = str(prefix)


def imported_from(prefix: Path) -> set[Path]:
    """The checkouts whose ``host`` package a server imported, read from its bytecode prefix.

    Python writes each module's bytecode under ``PYTHONPYCACHEPREFIX`` at its source's absolute
    folder, so ``<prefix>/<checkout>/host/__init__.*.pyc`` names the checkout it came from.
    """
    return {
        Path("/", *pyc.parent.relative_to(prefix).parts[:-1]).resolve()
        for pyc in prefix.rglob("host/__init__.*.pyc")
    }


def check_imported(prefix: Path, root: Path, name: str) -> None:
    """Stop the benchmark unless the server ``name`` imported the host from ``root`` alone."""
    imported = imported_from(prefix)
    if imported != {root.resolve()}:
        found = ", ".join(sorted(map(str, imported))) or "nowhere"
        raise SystemExit(f"{name} runs the host from {found}, not {root}")


def uvicorn_cmd(app: str, port: int, workers: int = 1) -> list[str]:
    """uvicorn as the SDK's docs run it; only the per-request access log is off (gunicorn's is)."""
    cmd = [
        str(BIN / "uvicorn"),
        app,
        "--host",
        "127.0.0.1",
        "--port",
        str(port),
        "--no-access-log",
        "--log-level",
        "warning",
        "--timeout-keep-alive",
        "5",
    ]
    if workers > 1:
        cmd += ["--workers", str(workers)]
    return cmd


class Server:
    """A server process group: started on enter, killed on exit, whatever happened."""

    def __init__(
        self,
        name: str,
        cmd: Sequence[str],
        port: int,
        env: dict[str, str],
        cpus: frozenset[int] | None,
        log: Path,
        cwd: Path = ROOT,
    ) -> None:
        self.name = name
        # NOTE: gunicorn's first --chdir is the folder it starts in, put first on sys.path before
        # its own --chdir is read: a tree served from another folder imports that folder's code.
        self.cwd = cwd
        self.cmd = list(cmd)
        self.port = port
        self.env = env
        self.cpus = cpus
        self.log = log
        self.proc: subprocess.Popen[bytes] | None = None
        self.started = 0.0

    def __enter__(self) -> Server:
        cpus = self.cpus or ALL_CPUS

        def _pin() -> None:
            os.sched_setaffinity(0, cpus)
            _die_with_parent()

        with self.log.open("ab") as out:
            self.started = time.perf_counter()
            self.proc = subprocess.Popen(
                self.cmd,
                cwd=self.cwd,
                env=self.env,
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=subprocess.STDOUT,
                start_new_session=True,
                preexec_fn=_pin,
            )
        _LIVE[self.proc.pid] = self.proc
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()

    @property
    def pid(self) -> int:
        """The server's main process id."""
        if self.proc is None:
            raise ServerError(f"{self.name} is not started")
        return self.proc.pid

    def wait_ready(self, probe: Callable[[], bool], timeout: float = 30.0) -> float:
        """Call ``probe`` until it returns True; the seconds since launch. Raises if it dies."""
        deadline = time.monotonic() + timeout
        while True:
            self.check_alive()
            try:
                if probe():
                    return time.perf_counter() - self.started
            except OSError:
                pass
            if time.monotonic() > deadline:
                raise ServerError(f"{self.name} not ready after {timeout:.0f} s: {self.tail()}")
            time.sleep(0.02)

    def check_alive(self) -> None:
        """Raise ServerError if the server's main process has exited (its figures are not its)."""
        if self.proc is not None and self.proc.poll() is not None:
            raise ServerError(f"{self.name} exited with {self.proc.returncode}: {self.tail()}")

    def tail(self, lines: int = 15) -> str:
        """The last lines of the server's log, for error messages."""
        try:
            text = self.log.read_text(errors="replace").splitlines()
        except OSError:
            return "(no log)"
        return "\n".join(text[-lines:])

    def stop(self) -> None:
        """SIGTERM the process group, then SIGKILL what is left after 5 s."""
        proc = self.proc
        if proc is None:
            return
        _stop(proc)
        _LIVE.pop(proc.pid, None)
        self.proc = None


def _stop(proc: subprocess.Popen[bytes]) -> None:
    for sig, wait in ((signal.SIGTERM, 5.0), (signal.SIGKILL, 5.0)):
        try:
            os.killpg(proc.pid, sig)
        except ProcessLookupError:
            break
        try:
            proc.wait(wait)
            # NOTE: the group may outlive its leader (a worker still exiting): finish it off.
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            break
        except subprocess.TimeoutExpired:
            continue
        break


def kill_all() -> None:
    """Stop every server this process started and has not stopped yet."""
    for pid in list(_LIVE):
        _stop(_LIVE.pop(pid))


def _children() -> dict[int, list[int]]:
    tree: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            stat = Path(f"/proc/{entry}/stat").read_text()
        except OSError:
            continue
        ppid = int(stat[stat.rindex(")") + 2 :].split()[1])
        tree.setdefault(ppid, []).append(int(entry))
    return tree


def _tree(pid: int) -> list[int]:
    tree = _children()
    out, todo = [], [pid]
    while todo:
        current = todo.pop()
        out.append(current)
        todo.extend(tree.get(current, []))
    return out


def worker_pids(pid: int) -> list[int]:
    """The direct children of ``pid`` (gunicorn's or uvicorn's workers), or ``[pid]`` if none."""
    return _children().get(pid, []) or [pid]


def cpu_seconds(pid: int) -> float:
    """User plus system CPU seconds used so far by ``pid`` and all its descendants."""
    total = 0
    for member in _tree(pid):
        try:
            stat = Path(f"/proc/{member}/stat").read_text()
        except OSError:
            continue
        fields = stat[stat.rindex(")") + 2 :].split()
        total += int(fields[11]) + int(fields[12])
    return total / _TICK


def rss_mb(pid: int) -> float:
    """Resident memory of ``pid`` in MiB (0 if it is gone)."""
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    except OSError:
        pass
    return 0.0
