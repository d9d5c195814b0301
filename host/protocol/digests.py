"""Digests of JSON values: what sealed tokens and store keys carry instead of the values.

A ``requestState`` binds its arguments and its caller by digest, a session id its caller, and
log lines name sessions, questions and elicitation ids by a digest that is enough to follow them
and not enough to use them. Every digest is of one canonical text per value, whatever its key
order.
"""

from __future__ import annotations

import base64
import hashlib
from functools import lru_cache
from typing import Any

from host.jsonvalues import encoder

__all__ = ["canonical_json", "digest", "principal_digest"]


def canonical_json(value: Any) -> str:
    """One text per JSON value, whatever the key order: the input of every digest."""
    return _CANONICAL(value)


_CANONICAL = encoder(sort_keys=True, compact=True)


def digest(value: Any) -> str:
    """A short, URL-safe SHA-256 digest (128 bits) of a JSON value's canonical text."""
    raw = hashlib.sha256(canonical_json(value).encode("utf-8")).digest()[:16]
    return base64.urlsafe_b64encode(raw).rstrip(b"=").decode("ascii")


@lru_cache(maxsize=1024)
def principal_digest(principal: str) -> str:
    """The principal as sealed tokens carry it: digested, so a token does not show it."""
    return digest(["principal", principal])
