"""A gunicorn worker's app: built from the settings (and, under ``host serve``, the master's specs).

Specs or settings that cannot be served stop the worker with what is wrong, not a traceback, and
with the exit status that tells gunicorn not to start it again. A store that cannot be opened is
the one exception under ``host serve``, whose master checked the store before any worker started:
a worker that meets it later meets an outage, so it exits with a status after which gunicorn
starts another worker a moment later (and the host recovers when the store does), instead of
stopping the whole host. (Such a worker does not reach a Redis store at boot at all: it boots
through a Redis outage, not ready, and its calls get 503 until Redis is back.)
"""

from __future__ import annotations

import sys
import time
from collections.abc import Mapping

import falcon

from host.errors import HostError, SpecError, StoreError
from host.logs import configure_logging
from host.machine import Machine
from host.settings import Settings
from host.spec.model import Project
from host.web.app import create_app
from host.web.lifecycle import end_streams_on_stop

__all__ = ["BOOT_ERROR", "OUTAGE_WAIT_S", "load_app"]

#: gunicorn stops the whole server, instead of restarting the worker, on this exit status.
BOOT_ERROR = 3

#: How long a worker that cannot open a store checked before waits before it exits (so that the
#: workers gunicorn starts in its place try again at this pace, not in a tight loop).
OUTAGE_WAIT_S = 1.0


def load_app(
    settings: Settings | None = None,
    project: Project | None = None,
    machines: Mapping[str, Machine] | None = None,
    *,
    store_checked: bool = False,
) -> falcon.App[falcon.Request, falcon.Response]:
    """The worker's app.

    Args:
        settings: The settings; read from ``HOST_*`` variables when None.
        project: Specs the master already checked; loaded from ``HOST_SPECS`` when None.
        machines: ``project`` compiled.
        store_checked: The master opened the store before starting workers (``host serve``).

    Raises:
        SystemExit: With :data:`BOOT_ERROR`, after printing what keeps the host from serving;
            with 1 when a store that was checked cannot be opened now (an outage).
    """
    configure_logging()  # until the settings are read, so their own errors are logged too
    try:
        settings = settings or Settings.from_env()
        configure_logging(settings.log_level)
        end_streams_on_stop()
        return create_app(
            settings=settings, project=project, machines=machines, store_checked=store_checked
        )
    except StoreError as exc:
        if not store_checked:
            print(f"host: not serving: {exc.message}", file=sys.stderr)
            raise SystemExit(BOOT_ERROR) from None
        print(
            f"host: this worker cannot open the store now: {exc.message}; another worker "
            "starts in its place in a moment",
            file=sys.stderr,
            flush=True,
        )
        time.sleep(OUTAGE_WAIT_S)
        raise SystemExit(1) from None
    except SpecError as exc:
        from host.spec.report import format_diagnostics

        print(format_diagnostics(exc.diagnostics, "text"), file=sys.stderr)
        print(f"host: not serving: {exc.message}", file=sys.stderr)
    except HostError as exc:
        print(f"host: not serving: {exc.message}", file=sys.stderr)
    raise SystemExit(BOOT_ERROR)
