"""The store's checks of its arguments: programming errors in the caller, raised as ValueError.

The :class:`host.store.Store` runs them once, before any backend sees the arguments.
"""

from __future__ import annotations

import math

__all__ = ["check_claim", "check_filters", "check_limit", "check_lock", "check_revoke", "check_ttl"]


def check_ttl(ttl_s: float, what: str = "ttl_s") -> None:
    """Reject a time to live that is not a positive, finite number of seconds.

    Raises:
        ValueError: A programming error in the caller, not bad user input.
    """
    if not (isinstance(ttl_s, int | float) and math.isfinite(ttl_s) and ttl_s > 0):
        raise ValueError(f"{what} must be a positive number of seconds, got {ttl_s!r}")


def check_claim(key: str, ttl_s: float, incident: str) -> None:
    """Reject arguments to ``claim_act`` that are programming errors.

    Raises:
        ValueError: ``ttl_s`` is not a positive number, or ``key`` or ``incident`` is empty.
    """
    check_ttl(ttl_s)
    if not key or not isinstance(key, str):
        raise ValueError(f"an act key must be a non-empty string, got {key!r}")
    if not incident or not isinstance(incident, str):
        raise ValueError(f"an incident id must be a non-empty string, got {incident!r}")


def check_lock(name: str, wait_s: float) -> None:
    """Reject arguments to ``acquire_lock`` that are programming errors.

    Raises:
        ValueError: ``name`` is empty, or ``wait_s`` is negative or not a finite number.
    """
    if not name or not isinstance(name, str):
        raise ValueError(f"a lock's name must be a non-empty string, got {name!r}")
    if not (isinstance(wait_s, int | float) and math.isfinite(wait_s) and wait_s >= 0):
        raise ValueError(f"wait_s must be a number of seconds, 0 or more, got {wait_s!r}")


def check_filters(**given: str | None) -> None:
    """Reject filters that are not text (programming errors, not user input).

    Raises:
        ValueError: A filter is neither None nor a non-empty string.
    """
    for name, value in given.items():
        if value is not None and (not isinstance(value, str) or not value):
            raise ValueError(f"{name} must be a non-empty string or None, got {value!r}")


def check_revoke(approval: str | None, principal: str | None, tool: str | None) -> None:
    """Reject a revocation that names nothing (it would forget every approval).

    Raises:
        ValueError: No filter is given, or one is not a non-empty text.
    """
    check_filters(approval=approval, principal=principal, tool=tool)
    if approval is None and principal is None and tool is None:
        raise ValueError("revoke_approvals needs an approval id, a principal or a tool")


def check_limit(limit: int) -> None:
    """Reject an audit query's limit that is not a positive whole number.

    Raises:
        ValueError: A programming error in the caller (the command line checks user input).
    """
    if isinstance(limit, bool) or not isinstance(limit, int) or limit < 1:
        raise ValueError(f"limit must be a positive whole number, got {limit!r}")
