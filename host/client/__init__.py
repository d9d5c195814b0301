"""An MCP client of a host, for people and programs that call tools: ``host call`` and the test kit.

It speaks modern MCP over a :class:`~host.client.wire.Transport` (a running host over HTTP, or
an app in-process), runs a tool call's rounds of questions to the end, and answers each question
with whatever its caller gives: a function, a list, a mapping. Nothing here needs pytest.
"""

from host.client.answers import Answers, Elicitation, UnansweredQuestion
from host.client.match import like
from host.client.mcp import McpClient
from host.client.results import CallResult, ProtocolViolation, ToolList
from host.client.wire import HttpReply, RawResponse, RpcError, Transport, WsgiTransport

__all__ = [
    "Answers",
    "CallResult",
    "Elicitation",
    "HttpReply",
    "McpClient",
    "ProtocolViolation",
    "RawResponse",
    "RpcError",
    "ToolList",
    "Transport",
    "UnansweredQuestion",
    "WsgiTransport",
    "like",
]
