"""A modern request's envelope: the per-request ``_meta``, and the routing headers that mirror it.

Every request says its protocol version and its client's capabilities in ``params._meta``; over
HTTP the ``MCP-Protocol-Version``, ``Mcp-Method`` and ``Mcp-Name`` headers must agree with the body.
The checks run in a fixed order, first failure wins: ``_meta`` present (-32602), headers agree with
the body (-32020), version supported (-32022), ``_meta`` well formed (-32602).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from host.errors import ProtocolError
from host.frozen import quick_init
from host.protocol.context import RequestContext
from host.protocol.header_values import decode_header_value
from host.protocol.jsonrpc import (
    HEADER_MISMATCH,
    INVALID_PARAMS,
    UNSUPPORTED_VERSION,
    Message,
    error,
)
from host.protocol.messages import LOG_LEVEL_KEY, read_level
from host.protocol.revisions import MODERN_VERSIONS, PROTOCOL_VERSION_KEY

__all__ = ["CLIENT_CAPABILITIES_KEY", "CLIENT_INFO_KEY", "Envelope", "read_envelope"]

CLIENT_CAPABILITIES_KEY = "io.modelcontextprotocol/clientCapabilities"
CLIENT_INFO_KEY = "io.modelcontextprotocol/clientInfo"

#: ``Mcp-Name`` carries this param of each name-bearing method.
_NAME_PARAM = {
    "tools/call": "name",
    "prompts/get": "name",
    "resources/read": "uri",
    "tasks/get": "taskId",
    "tasks/update": "taskId",
    "tasks/cancel": "taskId",
}


@quick_init
@dataclass(frozen=True)
class Envelope:
    """The per-request ``_meta`` of a modern request.

    Attributes:
        log_level: The lowest level of log messages the client wants for this request, or None.
    """

    version: str
    capabilities: Mapping[str, Any]
    client_info: Any = None
    log_level: str | None = None


def read_envelope(message: Message, request: RequestContext) -> Envelope:
    """Check a request's ``_meta`` and (over HTTP) its routing headers.

    Args:
        message: The request.
        request: Its context; its headers, over HTTP, must agree with the body.

    Raises:
        ProtocolError: -32602 (``_meta`` missing or malformed), -32020 (a header missing or
            disagreeing with the body), -32022 (unsupported version).
    """
    meta = message.params.get("_meta")
    if not isinstance(meta, Mapping):
        raise error(
            INVALID_PARAMS,
            f"params._meta is required, with {PROTOCOL_VERSION_KEY} and {CLIENT_CAPABILITIES_KEY}",
        )
    if PROTOCOL_VERSION_KEY not in meta or CLIENT_CAPABILITIES_KEY not in meta:
        missing = [k for k in (PROTOCOL_VERSION_KEY, CLIENT_CAPABILITIES_KEY) if k not in meta]
        raise error(INVALID_PARAMS, f"params._meta is missing {' and '.join(missing)}")
    version, capabilities = meta[PROTOCOL_VERSION_KEY], meta[CLIENT_CAPABILITIES_KEY]
    if request.headers is not None:
        _check_headers(message, version, request.headers)
    if not isinstance(version, str):
        raise error(INVALID_PARAMS, f"params._meta {PROTOCOL_VERSION_KEY} must be a string")
    if version not in MODERN_VERSIONS:
        raise error(
            UNSUPPORTED_VERSION,
            f"Unsupported protocol version: {version}",
            {"supported": list(MODERN_VERSIONS), "requested": version},
        )
    if not isinstance(capabilities, Mapping):
        raise error(INVALID_PARAMS, f"params._meta {CLIENT_CAPABILITIES_KEY} must be an object")
    level = meta.get(LOG_LEVEL_KEY)
    if level is not None:
        level = read_level(level, f"params._meta {LOG_LEVEL_KEY}")
    return Envelope(version, capabilities, meta.get(CLIENT_INFO_KEY), level)


def _check_headers(message: Message, version: Any, headers: Mapping[str, str]) -> None:
    if decode_header_value(headers.get("mcp-protocol-version")) != version:
        raise _mismatch(headers, "MCP-Protocol-Version", f"params._meta {PROTOCOL_VERSION_KEY}")
    if decode_header_value(headers.get("mcp-method")) != message.method:
        raise _mismatch(headers, "Mcp-Method", "the request's method")
    param = _NAME_PARAM.get(message.method)
    body_name = message.params.get(param) if param is not None else None
    # NOTE: a name that is not a string is the params check's to report, more precisely.
    if isinstance(body_name, str) and decode_header_value(headers.get("mcp-name")) != body_name:
        raise _mismatch(headers, "Mcp-Name", f"params.{param}")


def _mismatch(headers: Mapping[str, str], header: str, what: str) -> ProtocolError:
    sent = headers.get(header.lower())
    problem = "is missing" if sent is None else f"({sent!r}) does not match {what}"
    return error(HEADER_MISMATCH, f"Header mismatch: {header} {problem}", {"header": header})
