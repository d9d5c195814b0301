"""The key that signs the audit chain's checkpoints: Ed25519, from a PEM file or ``HOST_SECRET``.

``HOST_AUDIT_SIGNING_KEY`` names a PEM file holding an Ed25519 private key (PKCS#8, as
``openssl genpkey -algorithm ed25519`` writes it). Without it, the key is derived from the first
``HOST_SECRET`` key with HKDF-SHA256, so every worker and instance signs with the same key and no
file is needed; whoever holds ``HOST_SECRET`` can then also sign, which is why a deployment that
must convince an auditor sets a key of its own. Either way the public key (``host audit
public-key``) is all an auditor needs to check the checkpoints.
"""

from __future__ import annotations

import base64
import hashlib
from pathlib import Path

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey, Ed25519PublicKey
from cryptography.hazmat.primitives.kdf.hkdf import HKDF

from host.errors import HostError

__all__ = ["Signer", "key_id", "load_public_key", "signature_holds"]

_INFO = b"host audit checkpoint signing key v1"


def key_id(public: Ed25519PublicKey) -> str:
    """A short name of a public key: the first 16 hex digits of the SHA-256 of its raw bytes."""
    raw = public.public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw)
    return hashlib.sha256(raw).hexdigest()[:16]


class Signer:
    """Signs checkpoints with one Ed25519 key.

    Args:
        key: The private key.
        source: Where it came from, as a person reads it (a file, or ``HOST_SECRET``).
    """

    def __init__(self, key: Ed25519PrivateKey, source: str) -> None:
        self._key = key
        self.source = source
        self.public = key.public_key()
        self.key_id = key_id(self.public)

    @classmethod
    def from_pem(cls, path: Path) -> Signer:
        """The key in the PEM file ``path``.

        Raises:
            HostError: The file cannot be read, or holds no Ed25519 private key.
        """
        try:
            key = serialization.load_pem_private_key(path.read_bytes(), password=None)
        except (OSError, ValueError, TypeError) as exc:
            raise HostError(
                f"HOST_AUDIT_SIGNING_KEY: cannot read a key from {path}: {exc}"
            ) from None
        if not isinstance(key, Ed25519PrivateKey):
            raise HostError(
                f"HOST_AUDIT_SIGNING_KEY: {path} holds a {type(key).__name__}, not an Ed25519 "
                "private key (openssl genpkey -algorithm ed25519 makes one)"
            )
        return cls(key, str(path))

    @classmethod
    def derived(cls, secret: str) -> Signer:
        """The key derived from ``secret`` (the first ``HOST_SECRET`` key)."""
        seed = HKDF(algorithm=hashes.SHA256(), length=32, salt=None, info=_INFO).derive(
            secret.encode("utf-8")
        )
        return cls(Ed25519PrivateKey.from_private_bytes(seed), "a key derived from HOST_SECRET")

    def sign(self, data: bytes) -> str:
        """The signature of ``data``, base64."""
        return base64.b64encode(self._key.sign(data)).decode("ascii")

    def public_pem(self) -> str:
        """The public key as a PEM text an auditor can keep."""
        return self.public.public_bytes(
            serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
        ).decode("ascii")


def load_public_key(path: Path) -> Ed25519PublicKey:
    """The Ed25519 public key in the PEM file ``path`` (a private key's public half, too).

    Raises:
        HostError: The file cannot be read, or holds no Ed25519 key.
    """
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise HostError(f"--public-key: cannot read {path}: {exc.strerror}") from None
    try:
        key: object = serialization.load_pem_public_key(data)
    except ValueError:
        try:
            key = serialization.load_pem_private_key(data, password=None).public_key()
        except (ValueError, TypeError):
            raise HostError(f"--public-key: {path} holds no PEM key") from None
    if not isinstance(key, Ed25519PublicKey):
        raise HostError(f"--public-key: {path} holds a {type(key).__name__}, not an Ed25519 key")
    return key


def signature_holds(public: Ed25519PublicKey, data: bytes, signature: str) -> bool:
    """Whether ``signature`` (base64) is ``public``'s signature of ``data``."""
    try:
        public.verify(base64.b64decode(signature, validate=True), data)
    except (InvalidSignature, ValueError):
        return False
    return True
