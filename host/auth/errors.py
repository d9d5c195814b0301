"""The errors of :mod:`host.auth`, rooted with every other in :mod:`host.errors`.

Two kinds of failure, for two audiences: :class:`AuthError` is about one request's credentials
(the transport answers 401 and logs the reason), :class:`AuthSettingsError` is about the
deployment's configuration (the host refuses to start and says which variable to fix).
"""

from host.errors import AuthError, AuthErrorKind, AuthSettingsError

__all__ = ["AuthError", "AuthErrorKind", "AuthSettingsError"]
