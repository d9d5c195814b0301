"""Moved to :mod:`host.client.wire` (``host call`` uses it too); kept for existing imports."""

from host.client.wire import (
    CLIENT_INFO,
    ERROR_NAMES,
    META_CAPABILITIES,
    META_CLIENT_INFO,
    META_VERSION,
    MODERN,
    HttpReply,
    RawResponse,
    RpcError,
    Transport,
    WsgiTransport,
    error_code,
    header_value,
    request_headers,
)

__all__ = [
    "CLIENT_INFO",
    "ERROR_NAMES",
    "META_CAPABILITIES",
    "META_CLIENT_INFO",
    "META_VERSION",
    "MODERN",
    "HttpReply",
    "RawResponse",
    "RpcError",
    "Transport",
    "WsgiTransport",
    "error_code",
    "header_value",
    "request_headers",
]
