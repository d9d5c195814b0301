"""The test kit's view of what a host keeps: remembered approvals and audit records.

``mcp.approvals`` pre-seeds and inspects approvals (a test of a confirm that remembers need not
answer it once first), and ``mcp.audit`` reads the audit trail, straight from the store of the
app under test. Only the test kit's client has them: a client of a remote host cannot reach its
store.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from host.auth import ANONYMOUS
from host.machine import Machine
from host.machine.remember import Remember, arguments_key
from host.machine.run import QuestionStep
from host.spec.durations import parse_duration
from host.spec.model import REMEMBER_MAX_S
from host.store import Store
from host.store.records import Approval, AuditRecord

__all__ = ["ApprovalsKit", "AuditKit"]


class ApprovalsKit:
    """``mcp.approvals``: the remembered approvals of the app under test.

    Args:
        store: The app's store.
        machines: The app's tools, to check what a test grants.
    """

    def __init__(self, store: Store, machines: Mapping[str, Machine]) -> None:
        self._store = store
        self._machines = machines

    def grant(
        self,
        tool: str,
        question: str,
        *,
        key: str | None = None,
        arguments: Mapping[str, Any] | None = None,
        principal: str = ANONYMOUS.principal,
        for_: str | float | None = None,
    ) -> Approval:
        """Remember a yes, as if ``principal`` had ticked ``question`` of ``tool``.

        Args:
            tool: The tool.
            question: The name of its confirm that remembers (``remember:``).
            key: The approval's key as the confirm's ``remember.key`` renders it; without it,
                the key of a call with ``arguments`` (the default key, a digest of them).
            arguments: The call's arguments, when the confirm has no ``key`` template.
            principal: Who said yes (``anonymous``, the kit's default caller, unless given).
            for_: How long: a duration (``"8h"``) or seconds; the confirm's own by default.

        Raises:
            ValueError: ``tool`` has no confirm ``question`` that remembers, or a duration is
                unreadable or over 30 days.
        """
        machine, remember = self._confirm(tool, question)
        if key is None:
            key = arguments_key(machine.arguments(arguments or {}))
        seconds = remember.for_s if for_ is None else _seconds(for_)
        return self._store.grant_approval(principal, tool, question, key, seconds)

    def list(self, *, principal: str | None = None, tool: str | None = None) -> list[Approval]:
        """The approvals remembered now, of ``principal`` and ``tool`` when given; oldest first."""
        return self._store.approvals(principal=principal, tool=tool)

    def revoke(
        self,
        approval: str | None = None,
        *,
        principal: str | None = None,
        tool: str | None = None,
    ) -> int:
        """Forget the approvals matching every filter given, as ``host approvals revoke`` does."""
        return self._store.revoke_approvals(approval=approval, principal=principal, tool=tool)

    def _confirm(self, tool: str, question: str) -> tuple[Machine, Remember]:
        machine = self._machines.get(tool)
        if machine is None:
            raise ValueError(f"there is no tool {tool!r}; tools: {', '.join(self._machines)}")
        remembering = {
            s.name: s.remember
            for s in machine.steps
            if isinstance(s, QuestionStep) and s.remember is not None
        }
        found = remembering.get(question)
        if found is None:
            which = ", ".join(remembering) or "none"
            raise ValueError(
                f"{tool} has no confirm {question!r} that remembers a yes (remember:); "
                f"its confirms that do: {which}"
            )
        return machine, found


def _seconds(value: str | float) -> float:
    seconds = value if isinstance(value, int | float) else parse_duration(value)
    if not 0 < seconds <= REMEMBER_MAX_S:
        raise ValueError(f"an approval lasts more than 0 and at most 30 days, not {value!r}")
    return float(seconds)


class AuditKit:
    """``mcp.audit``: the audit trail of the app under test.

    Args:
        store: The app's store.
        flush: Writes the records the app still holds (they are written in batches, off the
            request path): called before every read.
    """

    def __init__(self, store: Store, flush: Callable[[], object] = lambda: None) -> None:
        self._store = store
        self._flush = flush

    def records(
        self, *, tool: str | None = None, principal: str | None = None, limit: int = 100
    ) -> list[AuditRecord]:
        """The records of calls that ended, newest first, of ``tool`` and ``principal`` if given."""
        self._flush()
        return self._store.audit_records(tool=tool, principal=principal, limit=limit)

    def last(self, *, tool: str | None = None, principal: str | None = None) -> AuditRecord:
        """The record of the call that ended last.

        Raises:
            AssertionError: There is none (no call of that tool and principal has ended).
        """
        __tracebackhide__ = True
        found = self.records(tool=tool, principal=principal, limit=1)
        if not found:
            raise AssertionError("no call has ended yet, so the audit trail is empty")
        return found[0]
