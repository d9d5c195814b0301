"""``mcp.approvals``: the approvals of the app under test, remembered yeses and open requests.

A test seeds and inspects remembered yeses (``grant``, ``list``, ``revoke``), and decides approval
requests as another person would (``pending``, ``approve``, ``reject``). Every decision goes
through the approvals service's one decision function, the one the inbox, the API and the command
line call, so the same rules hold: nobody decides their own request, and the person deciding must
hold one of the request's approver scopes. A principal named in ``by`` holds every approver scope
the specs name, unless ``mcp.client(principal=..., scopes=[...])`` gave it others.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Mapping, MutableMapping
from typing import Any

from host.approvals.inbox import InboxRequest
from host.approvals.service import ApprovalsService
from host.auth import ANONYMOUS
from host.auth.identity import Identity
from host.errors import Conflict, Forbidden, NotFound
from host.machine import Machine
from host.machine.approve import ApproveStep
from host.machine.remember import Remember, arguments_key
from host.machine.steps import QuestionStep
from host.protocol.approvals import StoreApprovals
from host.spec.durations import parse_duration
from host.spec.model import REMEMBER_MAX_S
from host.store import Store
from host.store.records import Approval
from host.testing.deciding import DEFAULT_APPROVER, Decider

__all__ = ["ApprovalRefused", "ApprovalsKit"]


class ApprovalRefused(AssertionError):
    """The host refused a test's decision, as it would refuse that person in the inbox.

    Attributes:
        status: The API's answer: 403 (the caller, or no approver scope), 404 (no such request)
            or 409 (no longer pending, or decided by this person already).
    """

    def __init__(self, message: str, status: int) -> None:
        super().__init__(message)
        self.status = status


class ApprovalsKit:
    """``mcp.approvals``: remembered yeses and approval requests of the app under test.

    Args:
        store: The app's store.
        machines: The app's tools, to check what a test grants.
        service: The app's approvals service, which every decision goes through.
        scopes: The scopes the test's clients gave each principal (``mcp.client``), shared by
            every client of the test.
        vouch: Makes a deciding person's identity as the app's authenticator proves it (so the
            service establishes them again at each decision, as for any route); None: as given.
    """

    def __init__(
        self,
        store: Store,
        machines: Mapping[str, Machine],
        service: ApprovalsService | None = None,
        scopes: MutableMapping[str, frozenset[str]] | None = None,
        vouch: Callable[[str, Iterable[str]], Identity] | None = None,
    ) -> None:
        self._store = store
        self._vouch = vouch
        self._machines = machines
        self._service = service or ApprovalsService(store, machines)
        self.scopes: MutableMapping[str, frozenset[str]] = {} if scopes is None else scopes
        self.approver_scopes = frozenset(
            scope
            for machine in machines.values()
            for step in machine.steps
            if isinstance(step, ApproveStep)
            for scope in step.approvers
        )

    def pending(self, *, by: str | None = None) -> list[dict[str, Any]]:
        """The pending requests, newest first, as the API's request objects plus their ``step``.

        Args:
            by: Only those this principal may decide (not their own, one of their scopes).
        """
        if by is not None:
            return [self._plain(r) for r in self._service.decidable(self.identity(by))]
        now = time.time()
        requests = [r for r in self._store.requests() if r.status(now) == "pending"]
        return [self._plain(InboxRequest.of(r, "pending")) for r in requests]

    def requests(self) -> list[dict[str, Any]]:
        """Every request the host keeps, newest first, whatever its status, as :meth:`pending`."""
        return [self._plain(InboxRequest.of(r)) for r in self._store.requests()]

    def get(self, request: str) -> dict[str, Any] | None:
        """One request by id, as :meth:`pending` shows it; None when there is no such request."""
        found = self._store.request(request)
        return None if found is None else self._plain(InboxRequest.of(found))

    def approve(
        self, request: str = "latest", *, by: str = DEFAULT_APPROVER, reason: str = ""
    ) -> dict[str, Any]:
        """Approve ``request`` (an id, or ``"latest"``: the newest pending one) as ``by``.

        Raises:
            ApprovalRefused: ``by`` may not decide it, or it is no longer pending.
            LookupError: ``"latest"``, and no request is pending.
        """
        __tracebackhide__ = True
        return self.decide(request, "approve", by=by, reason=reason)

    def reject(
        self, request: str = "latest", *, by: str = DEFAULT_APPROVER, reason: str = ""
    ) -> dict[str, Any]:
        """Reject ``request`` (an id, or ``"latest"``) as ``by``, with ``reason``.

        Raises:
            ApprovalRefused: ``by`` may not decide it, or it is no longer pending.
            LookupError: ``"latest"``, and no request is pending.
        """
        __tracebackhide__ = True
        return self.decide(request, "reject", by=by, reason=reason)

    def decide(
        self, request: str, verdict: str, *, by: str = DEFAULT_APPROVER, reason: str = ""
    ) -> dict[str, Any]:
        """Decide ``request`` as ``by`` would in the inbox: ``approve`` or ``reject``.

        Raises:
            ApprovalRefused: The host refused the decision (see its ``status``).
            LookupError: ``"latest"``, and no request is pending.
        """
        __tracebackhide__ = True
        request_id = self._resolve(request)
        try:
            decided = self._service.decide(self.identity(by), request_id, verdict, reason)
        except Forbidden as exc:
            raise ApprovalRefused(exc.message, 403) from None
        except NotFound as exc:
            raise ApprovalRefused(exc.message, 404) from None
        except Conflict as exc:
            raise ApprovalRefused(exc.message, 409) from None
        return self._plain(decided)

    def apply(self, decider: Decider, request_id: str) -> bool:
        """Decide one request the way a test's ``on_approval``/``approvals=`` says.

        Returns:
            False when the test leaves it pending.
        """
        __tracebackhide__ = True
        found = self._store.request(request_id)
        if found is None:
            return False
        verdicts = decider.verdicts(self._plain(InboxRequest.of(found)))
        for verdict in verdicts or ():
            self.decide(request_id, verdict.decision, by=verdict.by, reason=verdict.reason)
        return bool(verdicts)

    def identity(self, principal: str) -> Identity:
        """``principal`` as the kit's clients call: the scopes ``mcp.client`` gave it, else
        every approver scope the specs name."""
        scopes = self.scopes.get(principal, self.approver_scopes)
        if self._vouch is not None:
            return self._vouch(principal, scopes)
        return Identity(principal=principal, scopes=frozenset(scopes), method="static")

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
        """Remember a yes, as if ``principal`` had said yes to ``question`` of ``tool``.

        The yes is kept as the host keeps one, with the tool's definition digest: it counts for
        the tool as it is served now, and no longer once a reload changes the tool.

        Args:
            tool: The tool.
            question: The name of its confirm (or approve) step that remembers (``remember:``).
            key: The approval's key as the step's ``remember.key`` renders it; without it,
                the key of a call with ``arguments`` (the default key, a digest of them).
            arguments: The call's arguments, when the step has no ``key`` template.
            principal: Who said yes (``anonymous``, the kit's default caller, unless given).
            for_: How long: a duration (``"8h"``) or seconds; the step's own by default.

        Raises:
            ValueError: ``tool`` has no step ``question`` that remembers, or a duration is
                unreadable or over 30 days.
            RuntimeError: The store refused to keep it.
        """
        machine, remember = self._remembering(tool, question)
        if key is None:
            key = arguments_key(machine.arguments(arguments or {}))
        seconds = remember.for_s if for_ is None else _seconds(for_)
        kept = StoreApprovals(self._store, principal, tool, machine.definition).keep(
            question, key, seconds
        )
        if kept is None:
            raise RuntimeError(f"the store could not keep the approval of {tool} > {question}")
        return kept

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

    def _resolve(self, request: str) -> str:
        if request != "latest":
            return request
        pending = self.pending()
        if not pending:
            raise LookupError("no approval request is pending, so there is no 'latest' to decide")
        return str(pending[0]["id"])

    def _plain(self, request: InboxRequest) -> dict[str, Any]:
        found = self._store.request(request.id)
        return {**request.plain(), "step": found.step if found is not None else ""}

    def _remembering(self, tool: str, question: str) -> tuple[Machine, Remember]:
        machine = self._machines.get(tool)
        if machine is None:
            raise ValueError(f"there is no tool {tool!r}; tools: {', '.join(self._machines)}")
        remembering = {
            s.name: s.remember
            for s in machine.steps
            if isinstance(s, QuestionStep | ApproveStep) and s.remember is not None
        }
        found = remembering.get(question)
        if found is None:
            which = ", ".join(remembering) or "none"
            raise ValueError(
                f"{tool} has no confirm {question!r} that remembers a yes (remember:); "
                f"its steps that do: {which}"
            )
        return machine, found


def _seconds(value: str | float) -> float:
    seconds = value if isinstance(value, int | float) else parse_duration(value)
    if not 0 < seconds <= REMEMBER_MAX_S:
        raise ValueError(f"an approval lasts more than 0 and at most 30 days, not {value!r}")
    return float(seconds)
