"""The host's JSON log lines caught in a buffer, the handler restored afterwards."""

from __future__ import annotations

import io
import logging
from collections.abc import Iterator
from contextlib import contextmanager

from host.logs import configure_logging

__all__ = ["caught_lines"]


@contextmanager
def caught_lines() -> Iterator[io.StringIO]:
    """``configure_logging`` writing to a buffer, and the ``host`` logger as it was after."""
    buffer = io.StringIO()
    logger = logging.getLogger("host")
    before = (list(logger.handlers), logger.level, logger.propagate)
    configure_logging(stream=buffer)
    try:
        yield buffer
    finally:
        logger.handlers[:] = before[0]
        logger.setLevel(before[1])
        logger.propagate = before[2]
