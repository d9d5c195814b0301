"""The host with every guarantee :mod:`bench.prices` prices taken away, served for one figure.

``bench/run.py`` serves this app beside the host as shipped (one pinned worker each, the same
load), so the report can say what the guarantees cost served, where requests share one GIL with
the handler pool's and the audit writer's threads, and not only in process. NOTE: a host whose
handlers run without their time limit, without its log lines, metrics or audit trail, and with
act claims that a power loss can forget: it exists for that one measurement, and nothing else
serves it.
"""

from __future__ import annotations

from bench import prices

__all__ = ["app"]

# NOTE: taken away for the life of the process, before the host's app is made (gunicorn imports
# this module in each worker; a patch made in the master would be forked the same).
prices.take_away((prices.ALL,))

from host.web.wsgi import app  # noqa: E402  (the patches come first)
