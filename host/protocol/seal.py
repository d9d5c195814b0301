"""Sealed tokens: small JSON payloads the client carries and cannot change, with an expiry.

Both things the host hands a client to bring back, a ``requestState`` and a legacy
``Mcp-Session-Id``, are sealed here: compact JSON in URL-safe base64, signed with itsdangerous
(HMAC-SHA256) under a salt of their own, so one can never be passed off as the other. Keys come
newest first, as operators write them in ``HOST_SECRET``: the first signs and every one verifies,
so a key can be rotated in and the old one retired a lifetime later.

A payload is readable by the client: never seal a secret in one. Opening reports why a token was
refused (for the log), never to the client.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import time
from collections.abc import Callable, Sequence
from typing import Any

from itsdangerous import BadData, Signer
from itsdangerous.encoding import want_bytes
from itsdangerous.signer import SigningAlgorithm

from host.jsonvalues import encoder

__all__ = ["Sealer"]


_COMPACT = encoder(compact=True)
# NOTE: a tuple made once: ``int | float`` written in an isinstance builds a new union each call.
_NUMBERS = (int, float)


class _CompactJson:
    """The payload's encoding: compact JSON in URL-safe base64, never compressed.

    NOTE: tokens are a few hundred bytes; zlib saved little and cost more than the HMAC.
    """

    @staticmethod
    def dumps(value: Any) -> str:
        text = _COMPACT(value)
        return base64.urlsafe_b64encode(text.encode("utf-8")).rstrip(b"=").decode("ascii")

    @staticmethod
    def loads(text: str | bytes) -> Any:
        raw = text.encode("ascii") if isinstance(text, str) else text
        return json.loads(base64.urlsafe_b64decode(raw + b"=" * (-len(raw) % 4)))


class _HmacSha256(SigningAlgorithm):
    """HMAC-SHA256 in one call into OpenSSL: the very signature itsdangerous's own makes.

    NOTE: its HMACAlgorithm builds an HMAC object in Python for each token.
    """

    def get_signature(self, key: bytes, value: bytes) -> bytes:
        return hmac.digest(key, value, "sha256")


_HMAC_SHA256 = _HmacSha256()


class _Signer(Signer):
    """itsdangerous's Signer, each key's derived key made once, not for every token."""

    def derive_key(self, secret_key: str | bytes | None = None) -> bytes:
        """The key that signs with ``secret_key`` (the newest when None), as itsdangerous's."""
        secret = self.secret_keys[-1] if secret_key is None else want_bytes(secret_key)
        derived: dict[bytes, bytes] = self.__dict__.setdefault("_derived", {})
        key = derived.get(secret)
        if key is None:
            key = derived[secret] = super().derive_key(secret)
        return key


class Sealer:
    """Seals and opens one kind of token.

    Args:
        keys: Secret keys, newest first: the first signs, every one verifies.
        salt: What kind of token this is; tokens of another salt never open.
        ttl_s: How long a sealed token stays valid, in seconds.
        max_length: Longer tokens are refused before any HMAC is computed.
        clock: The time source (tests pass their own).

    Raises:
        ValueError: No key, an empty key, or a lifetime that is not positive.
    """

    def __init__(
        self,
        keys: Sequence[str],
        salt: str,
        ttl_s: float,
        *,
        max_length: int,
        clock: Callable[[], float] = time.time,
    ) -> None:
        if not keys or any(not k for k in keys):
            raise ValueError(f"the {salt} sealer needs at least one non-empty key")
        if not ttl_s > 0:
            raise ValueError(f"the {salt} lifetime must be positive, got {ttl_s!r}")
        self.ttl_s = ttl_s
        self.clock = clock
        self._max_length = max_length
        # NOTE: itsdangerous orders keys oldest to newest and signs with the last. One signer,
        # made once: its Serializer made a new one (and its key list) for every token. The
        # tokens are the same either way: payload, ".", HMAC-SHA256 of a key derived per salt.
        self._signer = _Signer(
            list(reversed(keys)), salt=salt, digest_method=hashlib.sha256, algorithm=_HMAC_SHA256
        )

    def seal(self, payload: dict[str, Any]) -> str:
        """The token for ``payload``; it carries its expiry as ``x``."""
        body = _CompactJson.dumps({**payload, "x": round(self.clock() + self.ttl_s, 3)})
        return self._signer.sign(body).decode("ascii")

    def open(self, token: Any) -> dict[str, Any] | str:
        """The payload of a valid, unexpired token; else why it was refused (for the log)."""
        if not isinstance(token, str) or not token:
            return "not a non-empty string"
        if len(token) > self._max_length:
            return "too long"
        try:
            payload = _CompactJson.loads(self._signer.unsign(token))
        except (BadData, ValueError):  # a bad signature, or bad Base64 or JSON under a good one
            return "bad signature or encoding"
        if not isinstance(payload, dict):
            return "malformed payload"
        expiry = payload.get("x")
        if not isinstance(expiry, _NUMBERS) or isinstance(expiry, bool):
            return "malformed payload"
        if self.clock() > expiry:
            return "expired"
        return payload
