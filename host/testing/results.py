"""Moved to :mod:`host.client.results` (``host call`` uses it too); kept for existing imports."""

from host.client.results import (
    CallResult,
    ProtocolViolation,
    ToolList,
)

__all__ = [
    "CallResult",
    "ProtocolViolation",
    "ToolList",
]
