"""One exception hierarchy for the whole host, rooted in :class:`HostError`.

Every error carries structured fields rather than only a message, so each layer can turn it into
what its audience needs: a diagnostic line for a spec author, a JSON-RPC error for a client, an
``isError`` result for the model.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Literal

if TYPE_CHECKING:
    from host.spec.model import Pos

__all__ = [
    "AnswerMismatch",
    "AuthError",
    "AuthErrorKind",
    "AuthSettingsError",
    "Conflict",
    "ContentError",
    "DurationError",
    "FetchError",
    "Forbidden",
    "HandlerImportError",
    "HandlerProblem",
    "HandlerTimeout",
    "HostError",
    "NotFound",
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
    """The shared store could not be reached or answered something unexpected.

    Every HTTP route answers it with 503 and ``Retry-After: RETRY_AFTER_S``, never 500.
    """

    RETRY_AFTER_S = 5


class NotFound(HostError):
    """What was asked for does not exist, or the asker may not know that it does (HTTP 404)."""


class Forbidden(HostError):
    """The asker may see it but not do this to it (HTTP 403)."""


class Conflict(HostError):
    """It can no longer be done: the thing has moved on (HTTP 409)."""


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


class HandlerTimeout(HostError):
    """A handler ran past its time limit; it goes on running, unheard.

    Args:
        limit_s: The limit, in seconds.
    """

    def __init__(self, limit_s: float) -> None:
        super().__init__(f"the handler ran longer than {limit_s:g} seconds")
        self.limit_s = limit_s


class HandlerProblem(HostError):
    """A handler the validator cannot accept: its rule id, message, and a place in it if known.

    Args:
        rule: The validator rule it breaks.
        message: What is wrong and how to fix it.
        pos: Where in the handler's file, when the problem has a place.
    """

    def __init__(self, rule: str, message: str, pos: Pos | None = None) -> None:
        super().__init__(message)
        self.rule = rule
        self.pos = pos


class DurationError(HostError, ValueError):
    """A duration that cannot be read, or is out of range; the message says what to write."""


#: ``missing``: no bearer token was sent. ``invalid_token``: one was sent and it is not accepted.
AuthErrorKind = Literal["missing", "invalid_token"]


class AuthError(HostError):
    """A request's credentials were not accepted.

    The client learns only ``kind`` (through the ``WWW-Authenticate`` challenge); ``reason``
    says which check failed and is for the operator's log only, never for the response.

    Args:
        kind: ``missing`` or ``invalid_token``.
        reason: What exactly failed, for the log (never a token or a secret).
    """

    def __init__(self, kind: AuthErrorKind, reason: str) -> None:
        super().__init__("no bearer token" if kind == "missing" else "invalid bearer token")
        self.kind: AuthErrorKind = kind
        self.reason = reason

    def __repr__(self) -> str:
        return f"AuthError({self.kind!r}, {self.reason!r})"


class AuthSettingsError(SettingsError):
    """The auth settings cannot be used; the message names the variable or file to fix."""


class FetchError(HostError):
    """An issuer's document could not be fetched or is not a JSON object; the message says why."""
