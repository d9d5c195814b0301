"""Tokens a process issues to callers it vouches for itself: ``host call`` and the test kit.

When the host runs in-process for one person (``host call`` without ``--url``) or for a test,
there is no identity provider to ask: the caller is whoever runs the process. :class:`Issued`
mints random bearer tokens in memory for such callers, with the principal and scopes given, and
accepts only those, through the same gate, the same challenges and the same scope checks as a
deployment with real tokens. Nothing is written anywhere; the tokens die with the process.
"""

from __future__ import annotations

import secrets
import threading
from collections.abc import Iterable
from dataclasses import replace
from types import MappingProxyType

from host.auth.authenticator import Authenticator, bearer_token
from host.auth.errors import AuthError
from host.auth.identity import Identity
from host.auth.settings import AuthSettings

__all__ = ["Issued"]


class Issued(Authenticator):
    """An authenticator that accepts the tokens it minted, and nothing else."""

    def __init__(self) -> None:
        super().__init__(AuthSettings())
        self._identities: dict[str, Identity] = {}
        self._lock = threading.Lock()

    @property
    def enabled(self) -> bool:
        """Always: a caller without one of the minted tokens is refused."""
        return True

    def mint(self, principal: str, scopes: Iterable[str] = ()) -> str:
        """A new token for ``principal`` holding ``scopes``."""
        held = frozenset(scopes)
        identity = Identity(
            principal=principal,
            scopes=held,
            claims=MappingProxyType({"sub": principal, "scope": " ".join(sorted(held))}),
            method="static",
        )
        token = "issued_" + secrets.token_urlsafe(24)
        identity = replace(identity, proof=token)
        with self._lock:
            self._identities[token] = identity
        return token

    def authenticate(self, authorization: str | None) -> Identity:
        """The identity a minted token was made for.

        Raises:
            AuthError: ``missing`` without a bearer token, ``invalid_token`` for any other.
        """
        token = bearer_token(authorization)
        with self._lock:
            identity = self._identities.get(token)
        if identity is None:
            raise AuthError("invalid_token", "not a token this process issued")
        return identity

    def again(self, who: Identity) -> Identity:
        """``who`` established again from the minted token that proves it.

        Raises:
            AuthError: ``invalid_token`` when ``who`` was not minted here.
        """
        return self.authenticate(f"Bearer {who.proof}")

    def vouch(self, principal: str, scopes: Iterable[str] = ()) -> Identity:
        """``principal`` holding ``scopes``, as a request with a newly minted token proves it."""
        return self.authenticate(f"Bearer {self.mint(principal, scopes)}")
