"""Log lines as JSON objects, one per line, for the host's loggers.

Code logs with the standard :mod:`logging` API and puts its fields in ``extra``::

    log.info("tool call", extra={"event": "tool_call", "tool": "close_ticket", "round": 2})

and :class:`JsonFormatter` writes ``{"ts": ..., "level": "info", "logger": ..., "message": ...,
"event": "tool_call", "tool": "close_ticket", "round": 2}``, with the traceback as a string when
there is one. Never put answers' content, arguments or secrets in ``extra``: log lines leave the
machine. A line whose text may quote a redacted field (a handler's exception) carries the values
to hide under :data:`SECRETS`: the formatter writes each as ``"[redacted]"``. The ``ctx.log`` of
a tool that redacts fields is a :func:`scrubbing` logger, which puts them on every record it logs.
"""

from __future__ import annotations

import contextlib
import logging
import os
import sys
import time
from collections.abc import Mapping
from typing import Any, TextIO

from host.jsonvalues import encoder

__all__ = [
    "REDACTED",
    "SECRETS",
    "JsonFormatter",
    "configure_logging",
    "emit",
    "scrub",
    "scrubbing",
    "secret_values",
]

REDACTED = "[redacted]"
"""What a redacted value reads as in a log line."""

SECRETS = "_secrets"
"""The ``extra`` key of the values a record's line must never show (redacted fields' values):
each is written as ``"[redacted]"`` wherever the message, the traceback or a field quotes it."""

#: Shorter values are not searched for: they would blot out line numbers and common words.
MIN_SECRET = 3

#: Attributes every LogRecord has; anything else on a record came from ``extra``.
_STANDARD = frozenset(
    vars(logging.LogRecord("x", logging.INFO, "x", 0, "x", None, None)).keys()
    | {"message", "asctime", "taskName"}
)

#: The marker the installed handler carries, so configuring twice does not log twice.
_MARK = "_host_json_handler"


_ENCODE = encoder(default=str)

#: The keys of :meth:`JsonFormatter.head`, in its order.
_HEAD_KEYS = frozenset(("ts", "level", "logger", "message", "pid"))

#: The head texts :meth:`JsonFormatter.line` keeps, one per level, logger, message and process.
_TAILS_KEPT = 64


def secret_values(values: Mapping[str, Any], hidden: frozenset[str]) -> tuple[str, ...]:
    """The texts of the fields named in ``hidden`` (every string and number inside them)."""
    found: list[str] = []

    def collect(value: Any) -> None:
        if isinstance(value, Mapping):
            for item in value.values():
                collect(item)
        elif isinstance(value, list | tuple):
            for item in value:
                collect(item)
        elif isinstance(value, str | int | float) and not isinstance(value, bool):
            text = str(value)
            if len(text) >= MIN_SECRET:
                found.append(text)

    for name in hidden & values.keys():
        collect(values[name])
    # NOTE: longest first, so a value that contains another is hidden whole.
    return tuple(sorted(set(found), key=len, reverse=True))


def scrub(text: str, secrets: tuple[str, ...]) -> str:
    """``text`` with each of ``secrets`` (longest first, as :func:`secret_values` gives them)
    written as ``"[redacted]"``."""
    for secret in secrets:
        text = text.replace(secret, REDACTED)
    return text


def scrubbing(base: logging.Logger, secrets: tuple[str, ...]) -> logging.Logger:
    """A logger whose records go to ``base`` carrying ``secrets`` (see :data:`SECRETS`)."""
    return _Scrubbing(base, secrets)


class _Scrubbing(logging.Logger):
    """A logger of one handler call that marks its records' secrets, then hands them to ``base``.

    NOTE: not registered with :mod:`logging` (one per call), it carries ``base``'s name and
    level, so its lines read as ``base``'s; every handler that formats them sees the secrets,
    and the JSON formatter writes each as ``"[redacted]"``, in the message and the traceback.
    """

    def __init__(self, base: logging.Logger, secrets: tuple[str, ...]) -> None:
        super().__init__(base.name, base.getEffectiveLevel())
        self.parent = base
        self.propagate = False
        self._base = base
        self._secrets = secrets

    def isEnabledFor(self, level: int) -> bool:
        """Whatever ``base`` would log."""
        return self._base.isEnabledFor(level)

    def handle(self, record: logging.LogRecord) -> None:
        """Put this call's secrets on ``record`` (with any it had), then let ``base`` handle it."""
        had: tuple[str, ...] = getattr(record, SECRETS, None) or ()
        found = set(had) | set(self._secrets)
        setattr(record, SECRETS, tuple(sorted(found, key=len, reverse=True)))
        self._base.handle(record)


def _scrub(value: Any, secrets: tuple[str, ...]) -> Any:
    if isinstance(value, str):
        return scrub(value, secrets)
    if isinstance(value, Mapping):
        return {k: _scrub(v, secrets) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_scrub(v, secrets) for v in value]
    return value


class JsonFormatter(logging.Formatter):
    """Formats a record as one line of JSON with its ``extra`` fields at the top level.

    NOTE: one line is written per tool call, so this is on the hot path: the timestamp text is
    built once per second and the encoder is made once.
    """

    #: The second of the last timestamp, its text to the second, and the line's opening to it.
    _clock: tuple[int, str, str] = (-1, "", "")

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._tails: dict[tuple[str, str, str, int], str] = {}

    def format(self, record: logging.LogRecord) -> str:
        """The record as a JSON object on one line."""
        line = self.head(record.created, record.levelname, record.name, record.getMessage())
        line["pid"] = record.process  # NOTE: the process that made the record
        for key, value in vars(record).items():
            if key not in _STANDARD and not key.startswith("_"):
                line[key] = value
        if record.exc_info:
            line["traceback"] = self.formatException(record.exc_info)
        elif record.exc_text:
            line["traceback"] = record.exc_text
        secrets = getattr(record, SECRETS, None)
        if secrets:
            line = {k: _scrub(v, secrets) for k, v in line.items()}
        return _ENCODE(line)

    def head(self, created: float, level: str, name: str, message: str) -> dict[str, Any]:
        """The fields every line starts with: time, level, logger, message and process id."""
        return {
            "ts": self._timestamp(created),
            "level": level.lower(),
            "logger": name,
            "message": message,
            # NOTE: which gunicorn worker wrote the line, to follow one call across workers.
            "pid": os.getpid(),
        }

    def _timestamp(self, created: float) -> str:
        """``created`` as the lines write it: ISO 8601 in UTC, to the millisecond."""
        second, stamp, _ = self._clocked(created)
        return f"{stamp}.{int((created - second) * 1000):03d}+00:00"

    def _clocked(self, created: float) -> tuple[int, str, str]:
        """The clock's texts for ``created``'s second, made once a second (one tuple, so a
        thread never reads one second's text with another's)."""
        clock = self._clock
        second = int(created)
        if clock[0] != second:
            stamp = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(second))
            opening = _ENCODE({"ts": stamp})[:-2]  # NOTE: '{"ts": "<stamp>', left open
            clock = self._clock = (second, stamp, opening)
        return clock

    def line(
        self, created: float, level: str, name: str, message: str, fields: Mapping[str, Any]
    ) -> str:
        """The text :meth:`format` writes for a record of these, with ``fields`` as ``extra``.

        NOTE: for :func:`emit`: only ``fields`` are encoded per line; the head's text after the
        timestamp is made once per level, logger, message and process, the timestamp's to the
        second once a second. Its milliseconds and offset are digits and signs, which JSON
        writes as they are. Some 12k instructions less than encoding the whole line.
        """
        if not _HEAD_KEYS.isdisjoint(fields):  # NOTE: a field then replaces a head's value
            line = self.head(created, level, name, message)
            line.update(fields)
            return _ENCODE(line)
        second, _, opening = self._clocked(created)
        key = (level, name, message, os.getpid())
        tail = self._tails.get(key) or self._tail(key)
        millis = f"{int((created - second) * 1000):03d}"
        if not fields:
            return f'{opening}.{millis}+00:00"{tail}}}'
        return f'{opening}.{millis}+00:00"{tail}, {_ENCODE(fields)[1:]}'

    def _tail(self, key: tuple[str, str, str, int]) -> str:
        """The head's text after its timestamp, for a line of ``key`` (level, logger, message,
        process), kept unless there are many already (messages that vary)."""
        level, name, message, pid = key
        text = _ENCODE({"level": level.lower(), "logger": name, "message": message, "pid": pid})
        tail = ", " + text[1:-1]
        if len(self._tails) < _TAILS_KEPT:
            self._tails[key] = tail
        return tail


def emit(logger: logging.Logger, level: int, message: str, fields: Mapping[str, Any]) -> None:
    """Log ``message`` with ``fields`` (as ``extra``), the same line as ``logger.log`` writes.

    NOTE: for a line written on every call (``tool call``). Where the line's only way out is the
    handler :func:`configure_logging` installed (as served), it is formatted and written there
    directly: logging's own path makes a record of some thirty attributes, and the formatter
    then sifts them for the few fields, at several times the cost of the line itself.
    """
    if not logger.isEnabledFor(level):
        return
    handler = _sole_json_handler(logger, level)
    formatter = handler.formatter if handler is not None else None
    if handler is None or not isinstance(formatter, JsonFormatter):
        logger.handle(logger.makeRecord(logger.name, level, __file__, 0, message, (), None,
                                        extra=fields))  # fmt: skip
        return
    text = formatter.line(time.time(), logging.getLevelName(level), logger.name, message, fields)
    text += handler.terminator
    with handler.lock or contextlib.nullcontext():
        try:
            stream = handler.stream
            stream.write(text)
            # NOTE: a line-buffered stream (stderr) flushed itself at the line's end.
            if not (getattr(stream, "line_buffering", False) and "\n" in handler.terminator):
                stream.flush()
        except Exception:
            # NOTE: as logging reports a line it could not write: never to the caller.
            logging.Handler.handleError(handler, logging.makeLogRecord({"msg": message}))


def _sole_json_handler(logger: logging.Logger, level: int) -> logging.StreamHandler[Any] | None:
    """The handler :func:`configure_logging` installed, when it alone takes ``logger``'s records
    at ``level`` and no filter stands in the way; None otherwise."""
    found: logging.StreamHandler[Any] | None = None
    current: logging.Logger | None = logger
    while current is not None:
        if current.filters:
            return None
        for handler in current.handlers:
            if found is not None or handler.filters or level < handler.level:
                return None
            if not getattr(handler, _MARK, False) or not isinstance(handler, logging.StreamHandler):
                return None
            found = handler
        if not current.propagate:
            break
        current = current.parent
    return found


def configure_logging(level: int | str = logging.INFO, stream: TextIO | None = None) -> None:
    """Send the ``host`` loggers' records to ``stream`` (stderr by default) as JSON lines.

    Calling it again replaces the handler it installed before rather than adding a second one.
    """
    logger = logging.getLogger("host")
    for handler in list(logger.handlers):
        if getattr(handler, _MARK, False):
            logger.removeHandler(handler)
    handler = logging.StreamHandler(stream or sys.stderr)
    handler.setFormatter(JsonFormatter())
    setattr(handler, _MARK, True)
    logger.addHandler(handler)
    logger.setLevel(level)
    # NOTE: one line per record: the root logger (gunicorn's, say) must not print it again.
    logger.propagate = False
