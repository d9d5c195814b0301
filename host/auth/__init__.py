"""Who is calling, and may they: the host as an OAuth 2.1 resource server, without HTTP in it.

The transport builds one :class:`Authenticator` from :class:`AuthSettings` at start-up, calls
:meth:`Authenticator.authenticate` with each request's ``Authorization`` header, and turns an
:class:`AuthError` into a 401 with :func:`unauthorized_challenge`. Above it, the caller is an
:class:`Identity`; :func:`missing_scopes` says whether it may call a tool, and
:func:`insufficient_scope_challenge` what to answer when not. :func:`protected_resource_metadata`
is the document to serve at each of :func:`protected_resource_paths`.

Static tokens need nothing beyond the standard library; JWTs need PyJWT (the ``auth`` extra),
imported only when an issuer is configured.
"""

from __future__ import annotations

from host.auth.authenticator import INSTALL_HINT, Authenticator, bearer_token
from host.auth.challenge import (
    insufficient_scope_challenge,
    protected_resource_metadata,
    protected_resource_paths,
    resource_metadata_url,
    unauthorized_challenge,
)
from host.auth.errors import AuthError, AuthErrorKind, AuthSettingsError
from host.auth.identity import ANONYMOUS, AuthMethod, Identity, local_user
from host.auth.issued import Issued
from host.auth.scopes import check_scope, missing_scopes, scopes_from_claims, split_scopes
from host.auth.settings import AuthSettings

__all__ = [
    "ANONYMOUS",
    "INSTALL_HINT",
    "AuthError",
    "AuthErrorKind",
    "AuthMethod",
    "AuthSettings",
    "AuthSettingsError",
    "Authenticator",
    "Identity",
    "Issued",
    "bearer_token",
    "check_scope",
    "insufficient_scope_challenge",
    "local_user",
    "missing_scopes",
    "protected_resource_metadata",
    "protected_resource_paths",
    "resource_metadata_url",
    "scopes_from_claims",
    "split_scopes",
    "unauthorized_challenge",
]
