"""``app`` for gunicorn: ``gunicorn host.web.wsgi:app``, configured by ``HOST_*`` variables.

See :mod:`host.settings` for the variables. Without ``HOST_SECRET`` every worker signs
``requestState`` with its own random key, and a loud warning says so: a retry that lands on another
worker then fails. ``host serve`` sets one for its workers.

Each worker loads the specs itself when it starts, so under plain gunicorn a reload (SIGHUP)
starts workers that read the files as they are then: specs with errors stop those workers, and
gunicorn then stops the server. ``host serve`` checks the specs in its master first instead
(:mod:`host.serve.master`). Specs or settings that cannot be served stop the worker with what is
wrong, not a traceback.
"""

from __future__ import annotations

from host.web.boot import load_app

__all__ = ["app"]

app = load_app()
