"""Moved to :mod:`host.client.mcp` (``host call`` uses it too); kept for existing imports."""

from host.client.mcp import (
    DEFAULT_CAPABILITIES,
    McpClient,
    Raw,
    Tools,
)

__all__ = [
    "DEFAULT_CAPABILITIES",
    "McpClient",
    "Raw",
    "Tools",
]
