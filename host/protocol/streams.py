"""A request's own event stream: notifications (progress, log messages) and server-to-client
requests, then the response, as server-sent events over HTTP or as lines on stdio.

Progress and log messages work the same in every revision. A request that asked for either (a
``progressToken`` in its ``params._meta``, or a log level: see :mod:`host.protocol.messages`) and,
over HTTP, whose ``Accept`` lists ``text/event-stream``, runs its call on a helper thread, while
the request's thread waits for the first thing the call produces:

* the call finishes first (a fast tool, or one that never reports or logs): the reply is the
  plain JSON response, with its usual HTTP status, as if nothing had been asked for;
* the handler reports progress or logs first: the reply becomes ``text/event-stream``; each
  ``ctx.progress`` report is sent as ``notifications/progress`` and each ``ctx.log`` record at or
  above the level as ``notifications/message``, the moment it is made, and the response comes
  last (a JSON-RPC error too, with HTTP 200, once the stream has begun).

A request that asked for neither never starts a thread. Under gunicorn's gthread workers the
stream is a generator that the worker thread iterates while the call runs beside it; a client
that goes away closes the generator, and the call still runs to its end (its act at most once),
unheard.
"""

from __future__ import annotations

import logging
import queue
import threading
from collections.abc import Callable, Generator, Iterator, Mapping
from typing import Any, Generic, TypeVar

from host import jsonvalues
from host.errors import ProtocolError
from host.machine import ProgressSink
from host.protocol.jsonrpc import failure, internal_error
from host.protocol.messages import LogForward

__all__ = [
    "NO_BUFFERING",
    "Event",
    "EventStream",
    "Notifier",
    "ProgressToken",
    "Running",
    "beside",
    "notifier_for",
    "progress_token",
    "respond",
]

log = logging.getLogger("host.protocol.progress")

T = TypeVar("T")

ProgressToken = str | int

Event = dict[str, Any] | None
"""A JSON-RPC message to send on the stream, or None for a keep-alive pause."""

#: Response headers of every event stream: proxies that buffer would hold events back.
NO_BUFFERING: Mapping[str, str] = {"X-Accel-Buffering": "no"}

_KEEPALIVE = b": keep-alive\n\n"
_PROGRESS = "notifications/progress"
_MESSAGE = "notifications/message"


class EventStream:
    """The server-sent events of one request: notifications, questions, keep-alives, the response.

    Over HTTP it is iterated as ``text/event-stream`` bytes; the stdio transport reads
    :meth:`messages` instead. Closing it (the client went away) stops the stream where it waits.
    """

    def __init__(self, events: Generator[Event, None, None]) -> None:
        self._events = events

    def messages(self) -> Iterator[Event]:
        """The JSON-RPC messages in order, with None where a keep-alive would be sent."""
        return self._events

    def __iter__(self) -> Iterator[bytes]:
        for event in self._events:
            if event is None:
                yield _KEEPALIVE
            else:
                data = jsonvalues.dumps(event, compact=True)
                yield b"event: message\ndata: " + data.encode("utf-8") + b"\n\n"

    def close(self) -> None:
        """Stop the stream (the WSGI server calls this when the client disconnects)."""
        self._events.close()


def progress_token(params: Mapping[str, Any]) -> ProgressToken | None:
    """The request's ``_meta.progressToken`` (a string or an integer), or None."""
    meta = params.get("_meta")
    if not isinstance(meta, Mapping):
        return None
    token = meta.get("progressToken")
    if isinstance(token, bool) or not isinstance(token, str | int):
        return None
    return token


class Notifier:
    """The notifications of one request, for every round it runs (legacy calls have several).

    Progress: calling it is the ``ctx.report`` of the calls it runs (:attr:`report`): it checks
    that the value increases (MCP's rule; a report that does not is dropped, with a warning) and
    queues a ``notifications/progress`` for the stream of the :class:`Running` call. Log messages:
    :attr:`logs` gives the calls' ``ctx.log`` records at or above the client's level to the same
    stream as ``notifications/message``. Both keep the order in which the handler made them.

    Args:
        token: The request's ``progressToken``, echoed in every report; None when it sent none
            (reports are then dropped: :attr:`report` is None).
        tool: The tool's name, for log lines and as the log messages' ``logger``.
        level: The lowest log level the client wants, or None when it set none (no message is
            ever sent: :attr:`logs` is None).
    """

    def __init__(self, token: ProgressToken | None, tool: str, level: str | None = None) -> None:
        self.token = token
        self.tool = tool
        self.logs = None if level is None else LogForward(level, tool, self._message)
        self._last: float | None = None
        self._lock = threading.Lock()
        self._queue: queue.SimpleQueue[tuple[str, Any]] | None = None

    @property
    def report(self) -> ProgressSink | None:
        """The calls' progress sink, or None when the request asked for no progress."""
        return None if self.token is None else self

    def __call__(self, progress: float, total: float | None, message: str | None) -> None:
        if self.token is None:
            return
        with self._lock:
            last, target = self._last, self._queue
            if last is not None and progress <= last:
                log.warning(
                    "progress dropped: it must increase",
                    extra={
                        "event": "progress_dropped",
                        "tool": self.tool,
                        "progress": progress,
                        "last": last,
                    },
                )
                return
            self._last = progress
            params: dict[str, Any] = {"progressToken": self.token, "progress": progress}
            if total is not None:
                params["total"] = total
            if message is not None:
                params["message"] = message
            if target is not None:
                # NOTE: queued under the lock, so reports from a handler's own threads keep
                # the order in which their values were checked.
                target.put(("event", {"jsonrpc": "2.0", "method": _PROGRESS, "params": params}))

    def _message(self, params: dict[str, Any]) -> None:
        with self._lock:
            if self._queue is not None:
                self._queue.put(("event", {"jsonrpc": "2.0", "method": _MESSAGE, "params": params}))

    def start(self, call: Callable[[Notifier], T]) -> Running[T]:
        """Run ``call(self)`` on a helper thread; its notifications go to the returned stream."""
        running: Running[T] = Running()
        with self._lock:
            self._queue = running.queue
        thread = threading.Thread(
            target=running.run, args=(call, self), name="host-call", daemon=True
        )
        thread.start()
        return running


class Running(Generic[T]):
    """A call on a helper thread: its notifications as they come, then its value."""

    def __init__(self) -> None:
        self.queue: queue.SimpleQueue[tuple[str, Any]] = queue.SimpleQueue()
        self._outcome: tuple[str, Any] | None = None

    def run(self, call: Callable[[Notifier], T], notifier: Notifier) -> None:
        """The helper thread's body: run the call, then queue its value or its exception."""
        try:
            self.queue.put(("value", call(notifier)))
        except BaseException as exc:  # NOTE: re-raised on the request's thread
            self.queue.put(("raised", exc))

    def first(self) -> dict[str, Any] | None:
        """Wait for the first notification (returned), or for the end of the call (None)."""
        kind, item = self.queue.get()
        if kind == "event":
            return dict(item)
        self._outcome = (kind, item)
        return None

    def result(self) -> T:
        """The call's value once it has ended (after :meth:`first` returned None).

        Raises:
            Exception: Whatever the call raised.
        """
        while self._outcome is None:
            kind, item = self.queue.get()
            if kind != "event":
                self._outcome = (kind, item)
        kind, item = self._outcome
        if kind == "raised":
            raise item
        value: T = item
        return value

    def events(self, keepalive_s: float) -> Generator[Event, None, T]:
        """The call's notifications as they come, then its value (returned) or exception (raised).

        Yields None after each ``keepalive_s`` of silence, for a keep-alive comment.
        """
        while self._outcome is None:
            try:
                kind, item = self.queue.get(timeout=keepalive_s)
            except queue.Empty:
                yield None
                continue
            if kind == "event":
                yield item
            else:
                self._outcome = (kind, item)
        return self.result()


def notifier_for(
    streams: bool, params: Mapping[str, Any], level: Callable[[], str | None]
) -> Notifier | None:
    """The notifier of a ``tools/call`` that asked for progress or log messages, else None.

    Args:
        streams: Whether the reply may be an event stream; without one nothing is asked for.
        params: The call's params (its ``progressToken``, its tool's name).
        level: The client's log level, or None; read only when the reply may stream.
    """
    if not streams:
        return None
    token = progress_token(params)
    lowest = level()
    if token is None and lowest is None:
        return None
    name = params.get("name")
    return Notifier(token, name if isinstance(name, str) else "", lowest)


def respond(
    notifier: Notifier | None,
    call: Callable[[Notifier | None], T],
    finish: Callable[[T], Iterator[Event]],
    *,
    request_id: Any,
    method: str,
    keepalive_s: float,
) -> T | EventStream:
    """Run a request's call; its value, or its event stream once a notification came first.

    Without a notifier the call runs here. With one it runs beside the request, which waits
    for the first thing the call produces: its value (returned as it is, so the reply stays
    plain JSON), or a notification: then the reply is this request's event stream, with that
    notification, those that follow as they come, and the events ``finish`` makes of the value.

    Args:
        notifier: The request's notifications (:func:`notifier_for`), or None.
        call: The call, given the notifier.
        finish: The events that end the stream, given the call's value (the response).
        request_id: The request's id, for the error response.
        method: The request's method, for log lines.
        keepalive_s: How long the stream may stay silent before a keep-alive comment.
    """
    if notifier is None:
        return call(None)
    running = notifier.start(call)
    first = running.first()
    if first is None:
        return running.result()

    def events() -> Generator[Event, None, None]:
        yield first
        try:
            value = yield from running.events(keepalive_s)
            yield from finish(value)
        except ProtocolError as exc:
            yield failure(request_id, exc)
        except Exception:
            yield failure(request_id, internal_error(method))

    return EventStream(events())


def beside(
    notifier: Notifier | None, call: Callable[[Notifier | None], T], keepalive_s: float
) -> Generator[Event, None, T]:
    """Run a later round of a call whose stream is open: its notifications go out on it live.

    Yields the notifications as they come (None after each ``keepalive_s`` of silence), then
    returns the call's value or raises its exception. Without a notifier the call runs here.
    """
    if notifier is None:
        return call(None)
    value: T = yield from notifier.start(call).events(keepalive_s)
    return value
