"""gunicorn inside ``host serve``: a master that checks the specs before any worker serves them.

:class:`HostServer` is a gunicorn application whose master holds the last good load of the specs
(:class:`host.serve.reload.Specs`). Workers are forked from the master and serve that load; they
never read the spec files themselves. On SIGHUP (``kill -HUP <master pid>``, or a file change when
watching) the master loads the files again first: only if they are good does gunicorn start new
workers with them and stop the old ones gracefully (their open requests finish); if not, the
diagnostics go to the log and nothing else happens, so the running workers keep serving.

Each worker checks, before it opens the store, that the SQLite store's file is still the one the
master started with (:mod:`host.serve.storefile`); if not, it refuses to start and the host stops.

The master also keeps the metrics' multiprocess folder: a dead worker's files are folded into
its archive there (gunicorn's ``child_exit``), and the folder goes when the master stops.
"""

from __future__ import annotations

import logging
import os
import shutil
import signal
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import falcon
from gunicorn.app.base import BaseApplication
from gunicorn.arbiter import Arbiter

from host.serve.pinning import pin_after_fork, pin_before_fork
from host.serve.reload import Specs
from host.serve.storefile import StoreFile
from host.settings import Settings
from host.web.boot import BOOT_ERROR, load_app

__all__ = ["HostServer"]

log = logging.getLogger("host.serve")


class HostServer(BaseApplication):  # type: ignore[misc]
    """``host serve``'s gunicorn.

    Args:
        config: gunicorn settings by name (``bind``, ``workers``, ...).
        settings: The workers' settings.
        specs: The specs, already loaded once (:attr:`Specs.current` is set).
        watch: Reload when a spec or handler file changes.
        pin_workers: Keep each worker on a CPU of its own (:mod:`host.serve.pinning`).
        metrics_dir: The private multiprocess metrics folder, removed when the master stops.
        store_file: The SQLite store's file as the master found it (None for Redis).
    """

    def __init__(
        self,
        config: Mapping[str, Any],
        settings: Settings,
        specs: Specs,
        *,
        watch: bool = False,
        pin_workers: bool = False,
        metrics_dir: Path | None = None,
        store_file: StoreFile | None = None,
    ) -> None:
        self.config = dict(config)
        self.settings = settings
        self.specs = specs
        self.watch = watch
        self.pin_workers = pin_workers
        self.metrics_dir = metrics_dir
        self.store_file = store_file
        self.master_pid = os.getpid()
        super().__init__()

    def load_config(self) -> None:
        """gunicorn's settings, and the hooks the host needs."""
        for name, value in self.config.items():
            self.cfg.set(name, value)
        self.cfg.set("child_exit", _child_exit)
        self.cfg.set("on_exit", self._on_exit)
        if self.pin_workers:
            self.cfg.set("pre_fork", pin_before_fork)
            self.cfg.set("post_fork", pin_after_fork)

    def load(self) -> falcon.App[falcon.Request, falcon.Response]:
        """The app a worker serves: the master's current specs (runs in the worker).

        Raises:
            SystemExit: With :data:`BOOT_ERROR` (gunicorn then stops the host) when the store's
                file is not the one the master started with.
        """
        problem = self.store_file.problem() if self.store_file is not None else None
        if problem is not None:
            print(f"host: not serving: {problem}", file=sys.stderr, flush=True)
            raise SystemExit(BOOT_ERROR)
        current = self.specs.current
        assert current is not None, "the master loads the specs before forking"
        return load_app(self.settings, current.project, current.machines, store_checked=True)

    def run(self) -> None:
        """Serve until stopped (the master's loop); returns in the master only."""
        try:
            _Arbiter(self).run()
        except RuntimeError as exc:
            print(f"host: not serving: {exc}", file=sys.stderr)
            sys.exit(1)

    def _on_exit(self, arbiter: Arbiter) -> None:
        if self.metrics_dir is not None and os.getpid() == self.master_pid:
            shutil.rmtree(self.metrics_dir, ignore_errors=True)


class _Arbiter(Arbiter):  # type: ignore[misc]
    """gunicorn's master, reloading only specs that load well."""

    app: HostServer

    def handle_hup(self) -> None:
        """Reload: new workers with the new specs if they are good; else only log why not."""
        self.log.info("Hang up: checking the specs before reloading")
        if self.app.specs.reload():
            super().handle_hup()

    def wait_for_signals(self, timeout: float = 1.0) -> list[int]:
        """gunicorn's signals, plus a SIGHUP of our own when watched files changed."""
        signals: list[int] = super().wait_for_signals(timeout)
        if self.app.watch and signal.SIGHUP not in signals and self.app.specs.changed():
            signals.append(signal.SIGHUP)
        return signals


def _child_exit(arbiter: Arbiter, worker: Any) -> None:
    """A worker is gone: fold its metrics files into the archive (only when metrics are kept)."""
    folder = os.environ.get("PROMETHEUS_MULTIPROC_DIR")
    if not folder:
        return
    from host.observers.metric_files import retire

    try:
        retire(worker.pid, folder)
    except Exception as exc:
        # NOTE: its files stay, so the sums lose nothing; only the folder holds more files. Any
        # failure, not only a full disk's: a bad metrics file must never stop the master.
        log.warning(
            "an exited worker's metrics files could not be folded in",
            extra={"event": "metrics_retire_failed", "pid": worker.pid, "reason": str(exc)},
        )
