"""Waiting for a condition instead of sleeping a fixed time: ``wait_until``."""

from __future__ import annotations

import time
from collections.abc import Callable

__all__ = ["wait_until"]


def wait_until(what: Callable[[], bool], timeout_s: float = 30.0, every_s: float = 0.05) -> bool:
    """Whether ``what()`` became true within ``timeout_s`` (looked at every ``every_s``)."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if what():
            return True
        time.sleep(every_s)
    return what()
