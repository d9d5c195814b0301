"""Log lines as JSON objects, one per line, for the host's loggers.

Code logs with the standard :mod:`logging` API and puts its fields in ``extra``::

    log.info("tool call", extra={"event": "tool_call", "tool": "close_ticket", "round": 2})

and :class:`JsonFormatter` writes ``{"ts": ..., "level": "info", "logger": ..., "message": ...,
"event": "tool_call", "tool": "close_ticket", "round": 2}``, with the traceback as a string when
there is one. Never put answers' content, arguments or secrets in ``extra``: log lines leave the
machine.
"""

from __future__ import annotations

import json
import logging
import sys
import time
from typing import Any, TextIO

__all__ = ["JsonFormatter", "configure_logging"]

#: Attributes every LogRecord has; anything else on a record came from ``extra``.
_STANDARD = frozenset(
    vars(logging.LogRecord("x", logging.INFO, "x", 0, "x", None, None)).keys()
    | {"message", "asctime", "taskName"}
)

#: The marker the installed handler carries, so configuring twice does not log twice.
_MARK = "_host_json_handler"


_ENCODE = json.JSONEncoder(ensure_ascii=False, default=str).encode


class JsonFormatter(logging.Formatter):
    """Formats a record as one line of JSON with its ``extra`` fields at the top level.

    NOTE: one line is written per tool call, so this is on the hot path: the timestamp text is
    built once per second and the encoder is made once.
    """

    _second = -1
    _stamp = ""

    def format(self, record: logging.LogRecord) -> str:
        """The record as a JSON object on one line."""
        second = int(record.created)
        if second != self._second:
            self._second = second
            self._stamp = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(second))
        millis = int((record.created - second) * 1000)
        line: dict[str, Any] = {
            "ts": f"{self._stamp}.{millis:03d}+00:00",
            "level": record.levelname.lower(),
            "logger": record.name,
            "message": record.getMessage(),
            # NOTE: which gunicorn worker wrote the line, to follow one call across workers.
            "pid": record.process,
        }
        for key, value in vars(record).items():
            if key not in _STANDARD and key[0] != "_":
                line[key] = value
        if record.exc_info:
            line["traceback"] = self.formatException(record.exc_info)
        elif record.exc_text:
            line["traceback"] = record.exc_text
        return _ENCODE(line)


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
