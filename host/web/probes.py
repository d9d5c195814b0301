"""What operators' tools poll: ``/healthz`` (the process answers), ``/readyz`` (it can serve), and
``/metrics`` (Prometheus). None of them needs a token: they say nothing about any caller.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

import falcon

from host.store import Store

if TYPE_CHECKING:
    from host.observers.metrics import MetricsObserver

__all__ = ["HealthResource", "MetricsResource", "ReadyResource"]

log = logging.getLogger("host.web")


class HealthResource:
    """``/healthz``: the process answers, whatever the state of the store."""

    def on_get(self, req: falcon.Request, resp: falcon.Response) -> None:
        """Always 200 while the process runs."""
        resp.media = {"status": "ok"}


class ReadyResource:
    """``/readyz``: the specs are loaded, and the store and the metrics' files take a write now.

    Args:
        store: The shared store (:meth:`host.store.Store.health` is asked on every request).
        tools: How many tools are served.
        metrics: The metrics, when kept (:meth:`MetricsObserver.problem` is asked too).
    """

    def __init__(self, store: Store, tools: int, metrics: MetricsObserver | None = None) -> None:
        self.store = store
        self.tools = tools
        self.metrics = metrics

    def on_get(self, req: falcon.Request, resp: falcon.Response) -> None:
        """200 when ready; 503 with the reason when the store or the metrics cannot be written."""
        resp.set_header("Cache-Control", "no-store")
        # NOTE: both asked, so a full disk names everything it stops, not only the first; the
        # metrics first, since the store's probe write, refused on a full disk, can give back
        # the bytes it took, and a probe after it would find room that nothing else has.
        found = [self.metrics.problem() if self.metrics else None, self.store.health()]
        problem = "; ".join(p for p in found if p is not None) or None
        if problem is not None:
            log.warning("not ready", extra={"event": "not_ready", "reason": problem})
            resp.status = 503
            resp.media = {"status": "unavailable", "reason": problem}
            return
        resp.media = {"status": "ready", "tools": self.tools}


class MetricsResource:
    """``/metrics``: the Prometheus text format, summed over every worker (``HOST_METRICS``)."""

    def __init__(self, metrics: MetricsObserver) -> None:
        self.metrics = metrics

    def on_get(self, req: falcon.Request, resp: falcon.Response) -> None:
        """Every metric, as Prometheus scrapes them."""
        body, content_type = self.metrics.exposition()
        resp.set_header("Cache-Control", "no-store")
        resp.content_type = content_type
        resp.data = body
