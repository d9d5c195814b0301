"""The errors of :mod:`host.auth`, rooted in :class:`host.errors.HostError`.

Two kinds of failure, for two audiences: :class:`AuthError` is about one request's credentials
(the transport answers 401 and logs the reason), :class:`AuthSettingsError` is about the
deployment's configuration (the host refuses to start and says which variable to fix).
"""

from __future__ import annotations

from typing import Literal

from host.errors import HostError

__all__ = ["AuthError", "AuthErrorKind", "AuthSettingsError"]

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


class AuthSettingsError(HostError):
    """The auth settings cannot be used; the message names the variable or file to fix."""
