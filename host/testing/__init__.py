"""The test kit for spec authors: a pytest plugin, an MCP test client, and spec examples as tests.

In a test, the ``mcp`` fixture (see :mod:`host.testing.plugin`) is a :class:`McpClient` of the real
app serving your specs. Outside pytest, :func:`serve` gives the same client.
"""

from host.testing.answers import Answers, Elicitation, UnansweredQuestion
from host.testing.client import McpClient
from host.testing.harness import serve
from host.testing.match import like
from host.testing.results import CallResult, ProtocolViolation, ToolList
from host.testing.wire import RawResponse, RpcError, WsgiTransport

__all__ = [
    "Answers",
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
