"""How a call ends without its act: its tool changed, it awaits an approval, or it holds a no."""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import replace

from host.machine import Ending, Machine, Once, Outcome
from host.protocol.answers import Ledger
from host.protocol.context import RequestContext

__all__ = ["awaits_approval", "changed", "refused"]

log = logging.getLogger("host.protocol")


def changed(machine: Machine, request: RequestContext) -> Outcome:
    """The end of a call whose tool changed (a reload) since its questions were asked."""
    log.info(
        "call of an earlier definition",
        extra={"event": "definition_changed", "tool": machine.name, "principal": request.principal},
    )
    return Outcome.error(
        f"The tool {machine.name} changed since this call's questions were asked, so nothing "
        "was done. Call the tool again: its questions will be asked as they read now."
    )


def awaits_approval(outcome: Outcome) -> bool:
    """Whether a call stopped at a pending approval: called again, it goes on from there.

    NOTE: its URL asks are kept (encrypted, until they expire), so the call made again once
    approved finds its pages submitted instead of asking the caller for the secret again.
    """
    return outcome.approval is not None and outcome.approval.status == "pending"


def refused(ledger: Ledger) -> Once | None:
    """The ``ctx.once`` of a call holding a no (decline, cancel): it never runs the act.

    NOTE: the machine ends a call at the question answered no; this holds even when that
    question is no longer asked (its ``when`` now false), so a no never becomes an act.
    """
    key = ledger.refusal()
    if key is None:
        return None
    said = ledger.accepted[key].answer.get("action")
    ending: Ending = "declined" if said == "decline" else "cancelled"
    text = f"The user said no ({key}). Nothing was done."

    def never(act: Callable[[], Outcome]) -> Outcome:
        return replace(Outcome.from_value(text), ending=ending)

    return never
