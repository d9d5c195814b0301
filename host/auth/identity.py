"""Who is calling: :class:`Identity`, as every layer above the transport sees it."""

from __future__ import annotations

import getpass
from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, Literal

__all__ = ["ANONYMOUS", "AuthMethod", "Identity", "local_user"]

#: How an identity was established: a verified JWT, a static token, or no authentication at all.
AuthMethod = Literal["jwt", "static", "none"]

_EMPTY: Mapping[str, Any] = MappingProxyType({})


@dataclass(frozen=True)
class Identity:
    """The caller of one request.

    Attributes:
        principal: Who it is: the token's ``sub``, a static token's name, or ``anonymous``.
        scopes: The scopes the caller holds (see :func:`host.auth.scopes.missing_scopes`).
        claims: The verified token's claims, read-only (empty without a JWT).
        method: How the caller was authenticated.
        proof: What establishes the caller again, later (:meth:`host.auth.Authenticator.again`):
            a static token's digest (hex), or a JWT itself; empty for no authentication.
    """

    principal: str
    scopes: frozenset[str] = frozenset()
    # NOTE: left out of equality and hashing: two requests by the same principal with the same
    # scopes are the same caller even though their tokens (and so ``iat``, ``jti``) differ.
    claims: Mapping[str, Any] = field(default_factory=lambda: _EMPTY, compare=False, repr=False)
    method: AuthMethod = "none"
    proof: str = field(default="", compare=False, repr=False)

    @property
    def owner(self) -> str:
        """Who owns what this caller keeps: states, sessions, approvals, requests and asks.

        NOTE: qualified by source, so a JWT ``sub`` never names a static token's holder: a static
        token's name (``[A-Za-z0-9._@-]``, never a colon) is its owner as it is, a JWT's owner is
        ``jwt:`` and its ``sub``. Static names stay as they were, so their holders keep what they
        kept; the two sets of owners can never meet, whatever the tokens file holds tomorrow.
        """
        return f"jwt:{self.principal}" if self.method == "jwt" else self.principal


#: The caller of a host served without auth settings: everyone is this one principal.
ANONYMOUS = Identity(principal="anonymous")


def local_user() -> Identity:
    """The operating-system user running this process, as the identity of a stdio caller.

    MCP leaves authorization to the environment on stdio: whoever can start the host is its caller.
    """
    try:
        name = getpass.getuser()
    except (KeyError, OSError):  # no user name for this uid (some containers)
        return ANONYMOUS
    return Identity(principal=name)
