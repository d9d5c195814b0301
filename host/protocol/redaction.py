"""Redacted fields in the store's records: encrypted, never written in clear.

The records that carry a call between rounds (a legacy relay's answers, a fallback question's
arguments and ledger) must hold the values of the fields a tool's ``audit: {redact: [...]}``
names, since the call resumes with them. Each such value is stored as ``{"$sealed": token}``:
its JSON encrypted with Fernet (AES-128-CBC and HMAC-SHA256, from ``cryptography``) under a key
derived with HKDF from each ``HOST_SECRET`` key, newest first: the first encrypts, every one
decrypts, so keys rotate as the sealed tokens' do.
"""

from __future__ import annotations

import base64
import json
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from cryptography.fernet import MultiFernet

__all__ = ["SEALED", "FieldCipher"]

SEALED = "$sealed"
"""The key of the one-entry object that stands for a redacted value in a store record."""

_INFO = b"host: redacted fields in store records"


class FieldCipher:
    """Encrypts and decrypts the redacted fields of store records.

    Args:
        keys: ``HOST_SECRET``'s keys, newest first.

    Raises:
        ValueError: No key, or an empty one.
    """

    def __init__(self, keys: Sequence[str]) -> None:
        if not keys or any(not k for k in keys):
            raise ValueError("the field cipher needs at least one non-empty key")
        self._keys = tuple(keys)
        self._made: MultiFernet | None = None

    @property
    def _fernet(self) -> MultiFernet:
        # NOTE: made on the first redacted value, not at start-up: cryptography costs a worker
        # several MB, and most hosts never seal a field.
        if self._made is None:
            from cryptography.fernet import Fernet, MultiFernet

            self._made = MultiFernet([Fernet(_derive(k)) for k in self._keys])
        return self._made

    def hide(self, values: Mapping[str, Any], hidden: frozenset[str]) -> dict[str, Any]:
        """``values`` with each field named in ``hidden`` encrypted."""
        return {k: self._seal(v) if k in hidden else v for k, v in values.items()}

    def show(self, values: Mapping[str, Any]) -> dict[str, Any]:
        """``values`` with every encrypted field decrypted (the inverse of :meth:`hide`).

        Raises:
            ValueError: A field was encrypted under no key this host has.
        """
        return {k: self._open(v) for k, v in values.items()}

    def _seal(self, value: Any) -> dict[str, str]:
        text = json.dumps(value, separators=(",", ":"), ensure_ascii=False)
        return {SEALED: self._fernet.encrypt(text.encode("utf-8")).decode("ascii")}

    def _open(self, value: Any) -> Any:
        if not (isinstance(value, Mapping) and len(value) == 1 and SEALED in value):
            return value
        from cryptography.fernet import InvalidToken

        try:
            return json.loads(self._fernet.decrypt(str(value[SEALED]).encode("ascii")))
        except InvalidToken as exc:
            raise ValueError("a redacted field was encrypted under another key") from exc


def _derive(key: str) -> bytes:
    """A Fernet key of its own for one ``HOST_SECRET`` key (never the signing key itself)."""
    from cryptography.hazmat.primitives import hashes
    from cryptography.hazmat.primitives.kdf.hkdf import HKDF

    raw = HKDF(algorithm=hashes.SHA256(), length=32, salt=None, info=_INFO).derive(
        key.encode("utf-8")
    )
    return base64.urlsafe_b64encode(raw)
