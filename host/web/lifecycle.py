"""What the web layer knows of its worker's life: when it stops, and whether a client has gone.

A legacy session's GET stream (:mod:`host.protocol.listen`) holds a worker thread for as long as
it is open. A gunicorn worker that is told to stop (SIGTERM: a reload, a scale-down, a shutdown)
waits for its open requests, up to the graceful timeout; so the streams must end as soon as the
signal comes, for the worker to leave at once and the clients to reconnect to one that serves.
"""

from __future__ import annotations

import logging
import select
import signal
import socket
import threading
from collections.abc import Callable, Iterable, Iterator
from types import FrameType
from typing import Any

__all__ = ["STOPPING", "client_gone", "end_streams_on_stop", "until_gone"]

log = logging.getLogger("host.web")

#: Set once this process has been told to stop serving.
STOPPING = threading.Event()


def end_streams_on_stop() -> None:
    """Set :data:`STOPPING` when SIGTERM comes, then let the worker's own handler run.

    Called in a gunicorn worker once it has installed its signal handlers and is loading the
    app; anywhere else (a test, a thread, no handler of gunicorn's) it does nothing.
    """
    if threading.current_thread() is not threading.main_thread():
        return
    previous = signal.getsignal(signal.SIGTERM)
    if not callable(previous):
        return

    def on_term(signum: int, frame: FrameType | None) -> None:
        STOPPING.set()
        previous(signum, frame)

    signal.signal(signal.SIGTERM, on_term)


def client_gone(environ: dict[str, Any]) -> Callable[[], bool]:
    """Whether the client of this request has closed its connection, as far as one can tell.

    NOTE: gunicorn hands the request's socket in ``gunicorn.socket``; a socket that is readable
    and yields no byte has been closed by the peer. Elsewhere (another server, TLS) it cannot be
    told, and the stream ends at its next write instead.
    """
    sock = environ.get("gunicorn.socket")
    if not isinstance(sock, socket.socket):
        return lambda: False

    def gone() -> bool:
        if sock.fileno() < 0:
            return True
        try:
            readable, _, _ = select.select([sock], [], [], 0)
            if not readable:
                return False
            return sock.recv(1, socket.MSG_PEEK | socket.MSG_DONTWAIT) == b""
        except (BlockingIOError, ValueError):  # NOTE: ValueError: a TLS socket cannot peek
            return False
        except OSError:
            return True

    return gone


def until_gone(chunks: Iterable[bytes], gone: Callable[[], bool]) -> Iterable[bytes]:
    """``chunks`` of an event stream, ended at a keep-alive once its client has gone.

    NOTE: a write to a connection the client has closed succeeds (the kernel takes it, and the
    client answers with a reset), so a waiting stream learnt of it only at its second keep-alive:
    a question given up held its thread and its place in the caller's limits for two keep-alive
    periods. Checked before each keep-alive comment, it is one.
    """
    return _UntilGone(iter(chunks), gone)


class _UntilGone:
    """An event stream that stops at its next keep-alive comment once the client has gone."""

    def __init__(self, chunks: Iterator[bytes], gone: Callable[[], bool]) -> None:
        self._chunks = chunks
        self._gone = gone

    def __iter__(self) -> Iterator[bytes]:
        return self

    def __next__(self) -> bytes:
        chunk = next(self._chunks)
        if chunk.startswith(b":") and self._gone():
            self.close()
            raise StopIteration
        return chunk

    def close(self) -> None:
        """End the stream where it waits (the server calls this at the reply's end)."""
        close: Any = getattr(self._chunks, "close", None)
        if close is not None:
            close()
