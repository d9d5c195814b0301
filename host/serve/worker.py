"""``host serve``'s gunicorn worker: gthread, whose stop does not wait on idle connections, and
whose threads serve their connection's next request themselves when it comes at once.

NOTE: on SIGTERM (a shutdown, a reload, a scale-down) gunicorn's gthread worker waits, up to the
graceful timeout, until it holds no connection, and closes a kept-alive idle one only when its
keep-alive ends and the wait next wakes: in practice, the whole graceful timeout. Every MCP
client keeps its connection alive, so every stop and every reload took 10 s. An idle connection
has nothing left to finish, and HTTP lets a server close one at any time (the client sends its
next request on a new connection), so this worker closes them as soon as it is told to stop,
and waits only for requests in flight (a request already sent on one is served first).

NOTE: gthread hands every request of a kept-alive connection round its main loop: the thread that
answered gives the connection back (a callback through a pipe), the main thread puts it in its
poller, and the next request goes to a thread again through a queue. A busy client's next request
comes within a fraction of a millisecond, so the thread that answered waits :data:`LINGER_S` for
it (its turn given away, :meth:`host.serve.pool.RequestPool.between`) and serves it itself.
Taken away, a plain call costs x1.087 of the server CPU and an exchange x1.116
(``bench/compare.py``, ``bench/RESULTS.md``). A quiet connection goes back to the poller as
before. A connection whose last request was refused over one of its caller's limits (429) queues
its next request behind every other request (:meth:`host.serve.pool.RequestPool.between`), so a
principal that floods past its limits waits for the other principals, not they for it.

NOTE: ``POST /mcp`` is answered without gunicorn's per-request environ and response objects
(:mod:`host.serve.direct`), a sixth of a plain call's server CPU; every other request goes
through gunicorn's own path.

NOTE: every request, on either path, is served through :class:`host.serve.drain.Drained`: a body
the app did not read is drained (bounded) before the response, or the response says
``Connection: close``, so a kept-alive connection's next request always gets an answer.
"""

from __future__ import annotations

import select
from typing import Any

from gunicorn.workers.gthread import ThreadWorker as _GthreadWorker

from host.limits import take_refused
from host.serve.direct import Direct
from host.serve.drain import Drained, serving
from host.serve.pool import RequestPool

__all__ = ["ThreadWorker"]


class ThreadWorker(_GthreadWorker):  # type: ignore[misc]
    """gunicorn's gthread worker, closing its idle connections once it is told to stop.

    Its threads are a :class:`host.serve.pool.RequestPool`: ``--threads`` of them, only a few
    running at once.
    """

    def load_wsgi(self) -> None:
        """Load the app, wrapped so that no request's unread body is left on its connection."""
        super().load_wsgi()
        self.wsgi: Any = Drained(self.wsgi)
        self.direct = Direct(self)

    def handle_request(self, req: Any, conn: Any) -> Any:
        """Serve one request, noted for :class:`host.serve.drain.Drained` (on every path):
        ``POST /mcp`` by :class:`host.serve.direct.Direct`, the rest by gunicorn."""
        serving(req)
        try:
            keep = self.direct.serve(req, conn)
            return super().handle_request(req, conn) if keep is None else keep
        finally:
            serving(None)

    def get_thread_pool(self) -> RequestPool:
        """The worker's request threads (gunicorn's hook for its pool)."""
        return RequestPool(self.cfg.threads)

    def handle(self, conn: Any) -> Any:
        """Serve the connection's request, and the next ones that come within :data:`LINGER_S`."""
        take_refused()  # NOTE: forget a refusal of this thread's previous connection
        keep = super().handle(conn)
        while keep is True and self.alive:
            behind = take_refused()
            if not self.tpool.between(lambda: _readable(conn.sock), behind=behind):
                break
            keep = super().handle(conn)
        return keep

    def wait_for_and_dispatch_events(self, timeout: float) -> Any:
        """Wait for the next events; once stopping, close the idle connections first."""
        if not self.alive:
            super().wait_for_and_dispatch_events(0)  # a request that has arrived is served
            self._close_idle()
            if getattr(self, "nr_conns", None) == 0:
                return None  # NOTE: nothing left to wake the wait, which would sleep it all out
        return super().wait_for_and_dispatch_events(timeout)

    def _close_idle(self) -> None:
        # NOTE: gunicorn's own sweeps close the connections whose time is up, keeping its count
        # of connections right; the attributes are gunicorn 26's, and absent from a gunicorn
        # that does not wait on idle connections at all (its stop was prompt already).
        for queue, sweep in (
            (getattr(self, "keepalived_conns", ()), getattr(self, "murder_keepalived", None)),
            (getattr(self, "pending_conns", ()), getattr(self, "murder_pending", None)),
        ):
            if sweep is None:
                continue
            for conn in queue:
                conn.timeout = 0.0
            sweep()


#: Seconds a thread waits for its connection's next request before handing it back to the poller.
LINGER_S = 0.005


def _readable(sock: Any) -> bool:
    poller = select.poll()
    poller.register(sock, select.POLLIN)
    return bool(poller.poll(LINGER_S * 1000))
