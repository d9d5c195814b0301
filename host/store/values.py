"""What the store answers with: an act's state, a way to lose records, and the lease's default."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

__all__ = ["DEFAULT_LEASE_S", "LAPSED", "ActState", "Risk"]

DEFAULT_LEASE_S = 5.0
"""How long an act claim's lease lasts without renewal: a dead owner's claim reads ``lost`` after
at most this long. Its owner renews it every third of this."""

LAPSED = "the process running it stopped renewing its claim (it died, hung, or lost the store)"
"""The reason of a claim that reads ``lost`` because its lease lapsed."""


@dataclass(frozen=True)
class ActState:
    """What became of an act that was claimed.

    Attributes:
        status: ``running`` (a live owner holds it), ``done`` (its result is recorded) or ``lost``
            (it may have happened; its outcome is unknown).
        value: The recorded result, when ``done``.
        incident: Fixed when the act was claimed, so every report about it names the same id.
        reason: Why it is ``lost``: its owner stopped renewing its lease, or the text of the
            error that kept its result from being recorded.
    """

    status: Literal["running", "done", "lost"]
    value: str | None
    incident: str
    reason: str | None = None


@dataclass(frozen=True)
class Risk:
    """One way a store can lose records, found by :meth:`host.store.Store.durability`.

    Attributes:
        message: One line for the operator: what is risked and how to fix it.
        refuse: True when the host must not start on this store unless the operator acknowledged
            the risk (see :data:`host.store.durability.VOLATILE_OK`); False for a warning.
    """

    message: str
    refuse: bool
