"""One exception hierarchy for the whole host, rooted in :class:`HostError`.

Every error carries structured fields rather than only a message, so each layer can turn it into
what its audience needs: a diagnostic line for a spec author, a JSON-RPC error for a client, an
``isError`` result for the model.
"""

from __future__ import annotations

from typing import Any

__all__ = [
    "HostError",
    "ProtocolError",
    "SpecError",
    "StoreError",
    "ToolError",
]


class HostError(Exception):
    """Base class of every error the host raises on purpose.

    Args:
        message: A sentence a person can act on.
    """

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


class ToolError(HostError):
    """A failure the model should see: becomes an ``isError`` result with this text.

    Handlers raise it for business errors ("There's no ticket T-9."). Any other exception
    from a handler is an internal failure whose details stay in the log.
    """


class SpecError(HostError):
    """Specs that cannot be served, with every diagnostic that explains why.

    Args:
        diagnostics: The problems found, each with its rule id and position.
    """

    def __init__(self, diagnostics: list[Any]) -> None:
        count = len(diagnostics)
        super().__init__(f"{count} problem{'s' if count != 1 else ''} in the specs")
        self.diagnostics = diagnostics


class ProtocolError(HostError):
    """A JSON-RPC error response, with the HTTP status the transport should use.

    Args:
        code: JSON-RPC error code (for example -32602).
        message: The error message sent to the client.
        data: Optional structured ``data`` member.
        http_status: HTTP status for the Streamable HTTP transport.
    """

    def __init__(self, code: int, message: str, data: Any = None, http_status: int = 200) -> None:
        super().__init__(message)
        self.code = code
        self.data = data
        self.http_status = http_status

    def to_error(self) -> dict[str, Any]:
        """The JSON-RPC ``error`` member."""
        error: dict[str, Any] = {"code": self.code, "message": self.message}
        if self.data is not None:
            error["data"] = self.data
        return error


class StoreError(HostError):
    """The shared store could not be reached or answered something unexpected."""
