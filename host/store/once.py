"""The older at-most-once helper, :meth:`host.store.base.Store.once`, over a backend's primitives.

It goes once the protocol core uses :meth:`host.store.base.Store.claim_act`, which knows the
owner of a claim and never hands a dead owner's act to someone else.
"""

from __future__ import annotations

import time
from collections.abc import Callable

from host.errors import StoreError
from host.store.base import backoff

__all__ = ["Attempt", "run_once"]

Attempt = tuple[bool, str | None]
"""What one attempt at a claim found: ``(True, None)`` taken; ``(False, value)`` recorded already;
``(False, None)`` another process is running it."""


def run_once(
    key: str,
    wait_s: float,
    claim: Callable[[], Attempt],
    compute: Callable[[], str],
    release: Callable[[], None],
    record: Callable[[str], None],
) -> str:
    """The protocol of :meth:`Store.once`, over a backend's ``claim``, ``release`` and ``record``.

    Try to claim ``key``; while another process holds it, wait (with :func:`backoff`) for its
    value up to ``wait_s``; once claimed, compute, then record, or release the claim if computing
    failed, so a retry may run it.

    Raises:
        StoreError: waited ``wait_s`` for another process to finish.
    """
    deadline = time.monotonic() + wait_s
    delays = backoff()
    while True:
        taken, value = claim()
        if value is not None:
            return value
        if taken:
            break
        left = deadline - time.monotonic()
        if left <= 0:
            raise StoreError(
                f"gave up after {wait_s:g}s waiting for another worker to finish {key!r}"
            )
        time.sleep(min(next(delays), left))
    try:
        value = compute()
        if not isinstance(value, str):
            raise TypeError(f"once() compute must return str, got {type(value).__name__}")
    except BaseException:
        release()
        raise
    record(value)
    return value
