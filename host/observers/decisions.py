"""The audit trail's records of approval requests: the decisions on one, and its end.

A decision is recorded when it is made (:func:`decision_record`, kind ``decision``: request,
principal, verdict, reason, time), so a request that never led to an act is in the trail too; a
call's record names its request and every decision on it (:func:`request_used`). Every time is
ISO 8601 UTC.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from host.jsonvalues import storable
from host.machine import Decided
from host.store.records import AuditRecord, iso

__all__ = ["HOST", "decision_record", "request_used"]

#: Who ends a request that nobody decided (it expired, or a reload voided it).
HOST = "(host)"


def request_used(decided: Decided) -> dict[str, Any]:
    """What the audit trail keeps of an approval request: its id, approvers and every decision
    (who, ``approve`` or ``reject``, why, and when, in ISO 8601)."""
    return {
        "request": decided.request,
        "via": "approvers",
        "status": "approved" if decided.status == "approved" else decided.status,
        "needed": decided.needed,
        "approved_by": list(decided.approved_by),
        "decisions": [_decision(d) for d in decided.decisions],
    }


def _decision(made: Mapping[str, Any]) -> dict[str, Any]:
    at = made.get("at")
    kept = {k: storable(v) for k, v in made.items() if k != "at"}
    kept["time"] = iso(at, ms=True) if isinstance(at, int | float) else at
    return kept


def decision_record(
    request: str,
    tool: str,
    caller: str,
    verdict: str,
    at: float,
    *,
    principal: str = HOST,
    reason: str = "",
    n: int | None = None,
) -> AuditRecord:
    """The record of one decision on ``request`` (the ``n``-th), or of its end (``verdict``).

    Its id is the request's and the decision's place (or the verdict), so every process that
    sees the same decision writes one record between them.
    """
    return AuditRecord(
        f"{request}/{n if n is not None else verdict}", at, principal, tool, verdict,
        kind="decision",
        detail={"request": request, "verdict": verdict, "reason": reason, "caller": caller},
    )  # fmt: skip
