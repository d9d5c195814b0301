"""Log forwarding: what a handler logs on ``ctx.log`` during a call, sent to the client too.

MCP's logging utility, from the server's side. A client asks for log messages by naming a minimum
level (RFC 5424's, lowest first: debug, info, notice, warning, error, critical, alert, emergency):

* a legacy session with ``logging/setLevel {level}``, for the rest of the session; the level is
  kept in the store under the session's id, so every worker and instance knows it;
* a modern request with ``params._meta["io.modelcontextprotocol/logLevel"]``, for that request
  only (the revision removed ``logging/setLevel``; the feature is deprecated there, SEP-2577).

From then on, every record a handler logs on ``ctx.log`` during a call, at or above that level, is
sent as ``notifications/message {level, logger, data}`` on the call's own event stream
(:mod:`host.protocol.streams`), and still goes to the server log exactly as before. ``logger`` is
the tool's name and ``data`` the record's message text (redacted fields' values written as
``"[redacted]"``, as in the server log: :func:`host.logs.scrubbing`): never its ``extra`` fields
nor a traceback, and never a record of the host's own (a handler's crash stays in the server log,
with its incident id). Without a level nothing is sent.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from typing import Any

from host.logs import SECRETS, scrub
from host.protocol.jsonrpc import INVALID_PARAMS, error

__all__ = ["LEVELS", "LOG_LEVEL_KEY", "LogForward", "mcp_level", "read_level"]

#: The levels a client may name, lowest first.
LEVELS: tuple[str, ...] = (
    "debug",
    "info",
    "notice",
    "warning",
    "error",
    "critical",
    "alert",
    "emergency",
)

#: The ``_meta`` key of a modern request's log level.
LOG_LEVEL_KEY = "io.modelcontextprotocol/logLevel"

# Python's numbers for MCP's levels; notice, alert and emergency fall between or above its own.
_NUMBERS: Mapping[str, int] = {
    "debug": logging.DEBUG,
    "info": logging.INFO,
    "notice": 25,
    "warning": logging.WARNING,
    "error": logging.ERROR,
    "critical": logging.CRITICAL,
    "alert": 60,
    "emergency": 70,
}

Send = Callable[[dict[str, Any]], None]
"""Sends the params of one ``notifications/message`` to the client."""


def read_level(value: Any, where: str) -> str:
    """A level a client named, checked.

    Raises:
        ProtocolError: -32602 when it is not one of :data:`LEVELS`.
    """
    if not isinstance(value, str) or value not in _NUMBERS:
        raise error(
            INVALID_PARAMS,
            f"{where} must be a log level, one of: {', '.join(LEVELS)}",
            {"supported": list(LEVELS)},
        )
    return value


def mcp_level(levelno: int) -> str:
    """The MCP level of a Python record: the highest level whose number it reaches."""
    found = LEVELS[0]
    for name in LEVELS:
        if levelno >= _NUMBERS[name]:
            found = name
    return found


class LogForward:
    """Where one call's ``ctx.log`` records go besides the server log: the client, when high enough.

    Args:
        level: The lowest level the client wants.
        tool: The tool's name, sent as each message's ``logger``.
        send: Sends one message's params on the call's stream.
    """

    def __init__(self, level: str, tool: str, send: Send) -> None:
        self.level = read_level(level, "the log level")
        self.tool = tool
        self.threshold = _NUMBERS[level]
        self._send = send

    def logger(self, base: logging.Logger) -> logging.Logger:
        """A logger for one round's ``ctx.log``: ``base``'s records, also sent to the client."""
        return _CallLogger(base, self)

    def forward(self, record: logging.LogRecord) -> None:
        """Send ``record`` to the client if it is at or above the client's level."""
        if record.levelno < self.threshold:
            return
        try:
            data = scrub(record.getMessage(), getattr(record, SECRETS, None) or ())
        except Exception:  # NOTE: bad format arguments; the server log's handler reports them
            return
        self._send({"level": mcp_level(record.levelno), "logger": self.tool, "data": data})


class _CallLogger(logging.Logger):
    """A logger of one call's handlers: each record goes to the client and to ``base``.

    It is not registered with :mod:`logging` (one per round, gone with it) and carries ``base``'s
    name, so server log lines read exactly as before. Its level lets records through down to the
    client's level; those below ``base``'s own level reach the client only, not the server log.
    """

    def __init__(self, base: logging.Logger, forward: LogForward) -> None:
        super().__init__(base.name, min(forward.threshold, base.getEffectiveLevel()))
        self.parent = base
        self.propagate = False
        self._base = base
        self._forward = forward

    def handle(self, record: logging.LogRecord) -> None:
        """Forward the record, then hand it to ``base``'s handlers if ``base`` logs that level."""
        if self.disabled or not self.filter(record):
            return
        self._forward.forward(record)
        if self._base.isEnabledFor(record.levelno):
            self._base.handle(record)
