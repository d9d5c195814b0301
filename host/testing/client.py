"""The test kit's MCP client: a client of the app under test that also reaches the app's store.

A client of a remote host cannot reach its store, so only the test kit's client has
``mcp.approvals`` and ``mcp.audit`` (:mod:`host.testing.records`); everything else it does is
:class:`host.client.McpClient`'s.
"""

from __future__ import annotations

from typing import Any, Self

from host.client import mcp
from host.client.wire import Transport
from host.testing.records import ApprovalsKit, AuditKit

__all__ = ["McpClient"]


class McpClient(mcp.McpClient):
    """:class:`host.client.McpClient`, plus the server's approvals and audit trail.

    Args:
        transport: Carries the HTTP requests (``WsgiTransport`` for an in-process app).
        approvals: The server's remembered approvals (see :attr:`approvals`).
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

    @property
    def approvals(self) -> ApprovalsKit:
        """The server's remembered approvals: ``grant``, ``list``, ``revoke``.

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

    def _sibling(self, transport: Transport, **options: Any) -> Self:
        return super()._sibling(transport, approvals=self._approvals, audit=self._audit, **options)
