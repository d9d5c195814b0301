"""One exception hierarchy for the whole host, rooted in :class:`HostError`.

Every error carries structured fields rather than only a message, so each layer can turn it into
what its audience needs: a diagnostic line for a spec author, a JSON-RPC error for a client, an
``isError`` result for the model.
"""

from __future__ import annotations

from typing import Any

__all__ = [
    "AnswerMismatch",
    "ContentError",
    "HandlerImportError",
    "HostError",
    "ProtocolError",
    "ScopeError",
    "SettingsError",
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


class ScopeError(ProtocolError):
    """The caller's credentials lack scopes the call needs: HTTP 403 with a challenge.

    Args:
        needed: Every scope the call needs (not only the missing ones), for the challenge.
    """

    CODE = -31002
    MESSAGE = "Insufficient scope: the caller's token lacks scopes this tool needs"

    def __init__(self, needed: tuple[str, ...], missing: tuple[str, ...]) -> None:
        data = {"type": "INSUFFICIENT_SCOPE", "requiredScopes": list(needed)}
        super().__init__(self.CODE, self.MESSAGE, data, 403)
        self.needed = needed
        self.missing = missing


class StoreError(HostError):
    """The shared store could not be reached or answered something unexpected."""


class SettingsError(HostError):
    """A deployment setting holds a value the host cannot use.

    Args:
        message: What is wrong and how to fix it.
        variable: The environment variable (``HOST_...``) at fault, when there is one.
    """

    def __init__(self, message: str, variable: str | None = None) -> None:
        super().__init__(message)
        self.variable = variable


class HandlerImportError(HostError):
    """A handler could not be imported or found, or has a parameter the host cannot fill.

    Args:
        message: What went wrong, naming the handler.
        call: The ``module:function`` reference, when known.
    """

    def __init__(self, message: str, call: str | None = None) -> None:
        super().__init__(message)
        self.call = call


class AnswerMismatch(HostError):
    """An accepted answer does not match the form it answers.

    Args:
        key: The question's key.
        errors: One ``{"field": ..., "message": ...}`` per problem.
    """

    MESSAGE = "The elicitation answer does not match the requested schema"

    def __init__(self, key: str, errors: list[dict[str, str]]) -> None:
        super().__init__(self.MESSAGE)
        self.key = key
        self.errors = errors


class ContentError(HostError):
    """A ``returns: content`` act returned something that is not a list of MCP content blocks.

    The message names the first problem (``content[2] (image): data is not base64``) without
    echoing the data.
    """
