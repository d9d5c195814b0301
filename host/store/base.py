"""The shared store's contract, and the small helpers both backends use.

The protocol layer keeps three kinds of record here, and each needs every worker process (and, with
Redis, every host instance) to see the same thing:

* at-most-once acts: :meth:`Store.once` runs an act for a key once and replays its recorded result;
* single-use claims: :meth:`Store.add` inserts only if absent, so a token is spent once;
* relayed answers: :meth:`Store.push` and :meth:`Store.pop` hand a value from one worker to another.

Every record has a time to live. Expired records are invisible at once and deleted lazily. Keys of
records (``once``, ``add``, ``get``, ``put``, ``delete``) and keys of queues (``push``, ``pop``) are
separate namespaces. A key used with :meth:`Store.once` should not also be written with ``add`` or
``put``: while its act runs, the backends may disagree about whether the key is taken.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Iterator
from typing import Protocol, runtime_checkable

from host.errors import StoreError

__all__ = ["Claim", "Store", "backoff", "check_ttl", "run_once"]


@runtime_checkable
class Store(Protocol):
    """Key-value records and queues shared by every process that opens the same URL."""

    def once(self, key: str, ttl_s: float, compute: Callable[[], str], wait_s: float = 30.0) -> str:
        """Run ``compute`` at most once for ``key`` across all processes, and return its value.

        The first caller claims the key and runs ``compute``; concurrent callers wait for its value;
        later callers get the recorded value until ``ttl_s`` seconds after it was recorded. A claim
        whose owner died is only taken over when it expires, ``ttl_s`` after it was made: running an
        act twice is worse than failing a retry.

        Args:
            key: What identifies the act (for example the nonce of a request state).
            ttl_s: How long the claim and then the recorded value live, in seconds.
            compute: The act; it returns the text to record.
            wait_s: How long to wait for another caller's value before giving up.

        Returns:
            The value ``compute`` returned, here or in whichever process ran it.

        Raises:
            host.errors.StoreError: Waiting took longer than ``wait_s``, or the store failed.
            Exception: Whatever ``compute`` raised; the claim is released first, so a retry may
                run it.
        """
        ...

    def add(self, key: str, value: str, ttl_s: float) -> bool:
        """Insert a record only if there is none (or only an expired one) for ``key``.

        Returns:
            True if this call inserted it; False if the key was already taken.
        """
        ...

    def get(self, key: str) -> str | None:
        """The record's value, or None if there is none, it expired, or its act is still running."""
        ...

    def put(self, key: str, value: str, ttl_s: float) -> None:
        """Insert or overwrite a record."""
        ...

    def delete(self, key: str) -> None:
        """Remove a record if there is one."""
        ...

    def push(self, key: str, value: str, ttl_s: float) -> None:
        """Append ``value`` to the queue ``key``, which expires ``ttl_s`` after its last push."""
        ...

    def pop(self, key: str, timeout_s: float) -> str | None:
        """Take the oldest value from the queue ``key``, waiting up to ``timeout_s`` for one.

        Returns:
            The value, or None if none arrived in time. ``timeout_s <= 0`` does not wait.
        """
        ...

    def health(self) -> str | None:
        """None if the store is reachable and takes a real write now; else one line why not."""
        ...

    def close(self) -> None:
        """Release connections. The store must not be used afterwards."""
        ...


def check_ttl(ttl_s: float, what: str = "ttl_s") -> None:
    """Reject a time to live that is not a positive, finite number of seconds.

    Raises:
        ValueError: A programming error in the caller, not bad user input.
    """
    if not (isinstance(ttl_s, int | float) and math.isfinite(ttl_s) and ttl_s > 0):
        raise ValueError(f"{what} must be a positive number of seconds, got {ttl_s!r}")


def backoff(first_s: float = 0.005, limit_s: float = 0.02) -> Iterator[float]:
    """Sleep lengths for polling: start short so a handover is quick, then settle at ``limit_s``."""
    delay = first_s
    while True:
        yield delay
        delay = min(delay * 1.5, limit_s)


Claim = tuple[bool, str | None]
"""What one attempt at a claim found: ``(True, None)`` taken; ``(False, value)`` recorded already;
``(False, None)`` another process is running it."""


def run_once(
    key: str,
    wait_s: float,
    claim: Callable[[], Claim],
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
