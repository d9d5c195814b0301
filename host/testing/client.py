"""The test kit's MCP client: a client of the app under test that also reaches the app's store.

A client of a remote host cannot reach its store, so only the test kit's client has
``mcp.approvals`` (:mod:`host.testing.approvals`) and ``mcp.audit`` (:mod:`host.testing.records`),
and only it decides approval requests as another person would: ``mcp.on_approval(...)`` and
``mcp.tools.call(..., approvals=...)``. Everything else it does is :class:`host.client.McpClient`'s.

A call that stops at an approve step ends at once in tests (the kit serves approve steps with no
wait): with a decision, the kit decides the request through the approvals service, then calls
the tool again with the same arguments and answers, as a caller continues a pending request, so
``mcp.tools.call`` returns the final result; without one, the pending result.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any, Self

from host.client import mcp
from host.client.answers import Answer, Answerer, Answers, Elicitation, UnansweredQuestion
from host.client.results import CallResult
from host.client.wire import Transport
from host.testing.approvals import ApprovalsKit
from host.testing.deciding import DEFAULT_APPROVER, Decider, Decisions
from host.testing.records import AuditKit

__all__ = ["KitTools", "McpClient", "pending_request"]


class KitTools(mcp.Tools):
    """``mcp.tools`` of the test kit: ``call`` also takes ``approvals=``."""

    _client: McpClient

    def call(
        self,
        name: str,
        arguments: Mapping[str, Any] | None = None,
        *,
        answers: Answers | None = None,
        approvals: Decisions | None = None,
    ) -> CallResult:
        """Call a tool, answering its questions and deciding its approvals, until it finishes.

        Args:
            name: The tool.
            arguments: Its arguments (``{}`` when None).
            answers: Answers for this call only, instead of the ones from ``on_elicitation``.
            approvals: Decisions for this call only, instead of the ones from ``on_approval``
                (the same values: ``"approve"``, ``"reject"``, a mapping, a function).

        Raises:
            UnansweredQuestion: The tool asked something the test gives no answer for.
            ApprovalRefused: The host refused a decision (the caller's own, no approver scope).
            ProtocolViolation: The server broke the protocol (see the message).
        """
        __tracebackhide__ = True
        decider = None if approvals is None else Decider(approvals)
        return self._client.call_deciding(name, dict(arguments or {}), answers, decider)


class McpClient(mcp.McpClient):
    """:class:`host.client.McpClient`, plus the server's approvals and audit trail.

    Args:
        transport: Carries the HTTP requests (``WsgiTransport`` for an in-process app).
        approvals: The server's approvals (see :attr:`approvals`).
        audit: The server's audit trail (see :attr:`audit`).
        options: As :class:`host.client.McpClient` takes them.
    """

    def __init__(
        self,
        transport: Transport,
        *,
        approvals: ApprovalsKit | None = None,
        audit: AuditKit | None = None,
        **options: Any,
    ) -> None:
        super().__init__(transport, **options)
        self._approvals = approvals
        self._audit = audit
        self._decider: Decider | None = None
        self.tools: KitTools = KitTools(self)

    @property
    def approvals(self) -> ApprovalsKit:
        """The server's approvals: remembered yeses (``grant``, ``list``, ``revoke``) and
        requests (``pending``, ``approve``, ``reject``).

        Raises:
            RuntimeError: This client is not the test kit's (a remote host's store is not here).
        """
        if self._approvals is None:
            raise RuntimeError("only the test kit's client can reach the server's approvals")
        return self._approvals

    @property
    def audit(self) -> AuditKit:
        """The server's audit trail: ``records``, ``last``.

        Raises:
            RuntimeError: This client is not the test kit's (a remote host's store is not here).
        """
        if self._audit is None:
            raise RuntimeError("only the test kit's client can read the server's audit trail")
        return self._audit

    def on_approval(
        self,
        decisions: Decisions | None,
        *,
        by: str | Sequence[str] = DEFAULT_APPROVER,
        reason: str = "",
    ) -> None:
        """Decide every approval request this client's calls make from now on (None: stop).

        Args:
            decisions: ``"approve"``, ``"reject"``, a mapping ``{"decision", "by", "reason"}``,
                a mapping from approve step name to one of those, or a function of the request
                (the API's request object plus its ``step``) returning one, or None to leave it
                pending.
            by: Who decides (a principal, or a list deciding in turn); ``approver`` by default.
            reason: The reason given with each decision.
        """
        self._decider = None if decisions is None else Decider(decisions, by=by, reason=reason)

    def client(
        self,
        *,
        protocol: str | None = None,
        capabilities: Mapping[str, Any] | None = None,
        client_info: Mapping[str, Any] | None = None,
        principal: str | None = None,
        scopes: Sequence[str] = (),
        token: str | None = None,
        tasks: bool | None = None,
    ) -> Self:
        """As :meth:`host.client.McpClient.client`; ``principal``'s ``scopes`` are also what it
        holds when a test names it in ``by``."""
        if principal is not None and self._approvals is not None:
            self._approvals.scopes[principal] = frozenset(scopes)
        return super().client(
            protocol=protocol,
            capabilities=capabilities,
            client_info=client_info,
            principal=principal,
            scopes=scopes,
            token=token,
            tasks=tasks,
        )

    def call_deciding(
        self,
        name: str,
        arguments: dict[str, Any],
        answers: Answers | None,
        decider: Decider | None,
    ) -> CallResult:
        """One call, to its end: a pending request decided as ``decider`` (or
        :meth:`on_approval`) says, then the call made again to continue it."""
        __tracebackhide__ = True
        decider = decider or self._decider
        result = self.call_tool(name, arguments, answers)
        decided: set[str] = set()
        while decider is not None and self._approvals is not None:
            request = pending_request(result)
            if request is None or request in decided:
                return result
            decided.add(request)
            if not self._approvals.apply(decider, request):
                return result
            again = self.call_tool(name, arguments, self._replay(result, answers))
            result = _joined(result, again)
        return result

    def _replay(self, result: CallResult, answers: Answers | None) -> Answers:
        """The answers the call gave, again (the same request is found by them), then the
        test's own for anything new."""
        given: dict[str, Any] = {}
        for exchange in result.exchanges:
            params = (exchange.request or {}).get("params", {})
            given.update(params.get("inputResponses") or {})
        fallback = Answerer(answers) if answers is not None else self._answers

        def replay(question: Elicitation) -> Answer:
            __tracebackhide__ = True
            if question.key in given:
                return dict(given[question.key])
            if fallback is None:
                raise UnansweredQuestion(
                    f"{question.tool} asked a question and this test gives no answer for it:\n"
                    f"{question.describe()}"
                )
            return fallback(question)

        return replay

    def _sibling(self, transport: Transport, **options: Any) -> Self:
        return super()._sibling(transport, approvals=self._approvals, audit=self._audit, **options)


def pending_request(result: CallResult) -> str | None:
    """The id of the approval request a call stopped at, still pending; else None."""
    raw = result.raw or {}
    meta = raw.get("_meta")
    found = meta.get("host/approval") if isinstance(meta, Mapping) else None
    if isinstance(found, Mapping) and found.get("status") == "pending":
        return str(found.get("request"))
    return None


def _joined(first: CallResult, then: CallResult) -> CallResult:
    """One result of a call made twice: the second's end, every round of both."""
    asked = {q.key for q in first.questions}
    return replace(
        then,
        rounds=first.rounds + then.rounds,
        # NOTE: the answers replayed were the caller's once: a question counts as asked once
        questions=first.questions + tuple(q for q in then.questions if q.key not in asked),
        exchanges=first.exchanges + then.exchanges,
    )
