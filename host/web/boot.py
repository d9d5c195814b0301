"""A gunicorn worker's app: built from the settings (and, under ``host serve``, the master's specs).

Specs or settings that cannot be served stop the worker with what is wrong, not a traceback, and
with the exit status that tells gunicorn not to start it again.
"""

from __future__ import annotations

import sys
from collections.abc import Mapping

import falcon

from host.errors import HostError, SpecError
from host.logs import configure_logging
from host.machine import Machine
from host.settings import Settings
from host.spec.model import Project
from host.web.app import create_app
from host.web.lifecycle import end_streams_on_stop

__all__ = ["BOOT_ERROR", "load_app"]

#: gunicorn stops the whole server, instead of restarting the worker, on this exit status.
BOOT_ERROR = 3


def load_app(
    settings: Settings | None = None,
    project: Project | None = None,
    machines: Mapping[str, Machine] | None = None,
) -> falcon.App[falcon.Request, falcon.Response]:
    """The worker's app.

    Args:
        settings: The settings; read from ``HOST_*`` variables when None.
        project: Specs the master already checked; loaded from ``HOST_SPECS`` when None.
        machines: ``project`` compiled.

    Raises:
        SystemExit: With :data:`BOOT_ERROR`, after printing what keeps the host from serving.
    """
    configure_logging()  # until the settings are read, so their own errors are logged too
    try:
        settings = settings or Settings.from_env()
        configure_logging(settings.log_level)
        end_streams_on_stop()
        return create_app(settings=settings, project=project, machines=machines)
    except SpecError as exc:
        from host.spec.report import format_diagnostics

        print(format_diagnostics(exc.diagnostics, "text"), file=sys.stderr)
        print(f"host: not serving: {exc.message}", file=sys.stderr)
    except HostError as exc:
        print(f"host: not serving: {exc.message}", file=sys.stderr)
    raise SystemExit(BOOT_ERROR)
