"""The test kit for spec authors: a pytest plugin, an MCP test client, and spec examples as tests.

In a test, the ``mcp`` fixture (see :mod:`host.testing.plugin`) is a :class:`McpClient` of the real
app serving your specs: it answers questions (``on_elicitation``) and decides approval requests as
another person would (``on_approval``, ``mcp.approvals``). Outside pytest, :func:`serve` gives the
same client.
"""

from host.client.answers import Answers, Elicitation, UnansweredQuestion
from host.client.match import like
from host.client.results import CallResult, ProtocolViolation, ToolList
from host.client.wire import RawResponse, RpcError, WsgiTransport
from host.testing.approvals import ApprovalRefused, ApprovalsKit
from host.testing.client import McpClient
from host.testing.harness import serve
from host.testing.records import AuditKit

__all__ = [
    "Answers",
    "ApprovalRefused",
    "ApprovalsKit",
    "AuditKit",
    "CallResult",
    "Elicitation",
    "McpClient",
    "ProtocolViolation",
    "RawResponse",
    "RpcError",
    "ToolList",
    "UnansweredQuestion",
    "WsgiTransport",
    "like",
    "serve",
]
