"""``app`` for gunicorn: ``gunicorn host.web.wsgi:app``, configured by ``HOST_*`` variables.

See :mod:`host.settings` for the variables. Without ``HOST_SECRET`` every worker signs
``requestState`` with its own random key, and a loud warning says so: a retry that lands on another
worker then fails. ``host serve`` sets one for its workers.

Specs or settings that cannot be served stop the worker with what is wrong, not a traceback.
"""

from __future__ import annotations

import sys

import falcon

from host.errors import HostError, SpecError
from host.logs import configure_logging
from host.settings import Settings
from host.web.app import create_app

__all__ = ["app"]

#: gunicorn stops the whole server, instead of restarting the worker, on this exit status.
_BOOT_ERROR = 3


def _load() -> falcon.App[falcon.Request, falcon.Response]:
    try:
        settings = Settings.from_env()
        configure_logging(settings.log_level)
        return create_app(settings=settings)
    except SpecError as exc:
        from host.spec.report import format_diagnostics

        print(format_diagnostics(exc.diagnostics, "text"), file=sys.stderr)
        print(f"host: not serving: {exc.message}", file=sys.stderr)
    except HostError as exc:
        print(f"host: not serving: {exc.message}", file=sys.stderr)
    raise SystemExit(_BOOT_ERROR)


configure_logging()  # until the settings are read, so their own errors are logged too
app = _load()
