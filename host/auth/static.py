"""Check static tokens against the tokens file, re-read when it changes.

A revoked token must stop working on a running host within seconds, without a restart: the file
is looked at (one ``stat``) at most once per ``check_interval`` and re-read when its inode, size,
times or mode changed. Writers replace the file atomically, so every rewrite gives it a new
inode and none is missed. A file that becomes unreadable, malformed or writable by others lets no
static token in until it is fixed (and says so in the log).
"""

from __future__ import annotations

import hmac
import logging
import os
import threading
import time
from collections.abc import Callable
from pathlib import Path
from types import MappingProxyType

from host.auth.errors import AuthError, AuthSettingsError
from host.auth.identity import Identity
from host.auth.names import name_forms
from host.auth.tokenfile import TokenRecord, digest, read_tokens

__all__ = ["StaticTokens"]

log = logging.getLogger("host.auth")

_Signature = tuple[int, ...] | None


class StaticTokens:
    """The tokens in a tokens file, as a running host accepts them.

    Args:
        path: The tokens file.
        check_interval: Least seconds between two looks at the file.
        clock: Monotonic seconds.

    Raises:
        AuthSettingsError: The file is unusable now (at start-up, better said at once).
    """

    def __init__(
        self,
        path: Path,
        *,
        check_interval: float = 1.0,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._path = path
        self._interval = check_interval
        self._clock = clock
        self._lock = threading.Lock()
        self._signature = self._stat()
        self._records: tuple[TokenRecord, ...] = tuple(read_tokens(path))
        self._indexed: tuple[tuple[TokenRecord, ...], dict[tuple[int, str], str]] | None = None
        self._checked_at = clock()
        if self._signature is None:
            log.warning(
                "the static tokens file does not exist yet; no static token is accepted until "
                "`host token create` makes one",
                extra={"event": "auth_tokens_missing", "path": str(path)},
            )

    def identify(self, token: str) -> Identity:
        """The identity of the static token ``token``.

        Raises:
            AuthError: ``invalid_token`` when no current token matches.
        """
        return self.identify_digest(digest(token).hex())

    def identify_digest(self, sha256: str) -> Identity:
        """The identity of the static token whose digest is ``sha256`` (hex), as it is now.

        Raises:
            AuthError: ``invalid_token`` when no current token has that digest.
        """
        try:
            wanted = bytes.fromhex(sha256)
        except ValueError:
            wanted = b""
        found = None
        # NOTE: every record is compared, in constant time, so timing tells nothing of which
        # digest came close or where in the file a match is.
        for record in self._current():
            if hmac.compare_digest(record.sha256, wanted):
                found = record
        if found is None or not wanted:
            raise AuthError("invalid_token", "no such static token (unknown or revoked)")
        return Identity(
            principal=found.name,
            scopes=frozenset(found.scopes),
            claims=MappingProxyType({"sub": found.name, "scope": " ".join(found.scopes)}),
            method="static",
            proof=found.sha256.hex(),
        )

    def holds(self, name: str) -> str | None:
        """The current static token's name that a person would read as ``name``, or None.

        NOTE: the same after NFKC case folding or by UTS #39 skeleton (:func:`same_name`), so
        ``ALICE`` or ``alice`` with a Cyrillic ``i`` (U+0456) cannot stand for ``alice`` in a trail.
        """
        forms = self._forms()
        return next((forms[k] for k in enumerate(name_forms(name)) if k in forms), None)

    def _forms(self) -> dict[tuple[int, str], str]:
        """Each current token's name by each of its forms (:func:`name_forms`), made once per
        reading of the file rather than for every caller's name asked about."""
        records = self._current()
        indexed = self._indexed
        if indexed is None or indexed[0] is not records:
            forms: dict[tuple[int, str], str] = {}
            for record in records:
                for key in enumerate(name_forms(record.name)):
                    forms.setdefault(key, record.name)
            indexed = self._indexed = (records, forms)
        return indexed[1]

    def _current(self) -> tuple[TokenRecord, ...]:
        with self._lock:
            now = self._clock()
            if now - self._checked_at >= self._interval:
                self._checked_at = now
                signature = self._stat()
                if signature != self._signature:
                    self._signature = signature
                    self._reload()
            return self._records

    def _stat(self) -> _Signature:
        try:
            st = os.stat(self._path)
        except FileNotFoundError:
            return None
        except OSError:
            return (-1,)  # unreadable: differs from any real signature, so re-read
        # NOTE: ctime and mode too, so a chmod that opens the file to others is noticed at once.
        return (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_mode)

    def _reload(self) -> None:
        try:
            records = tuple(read_tokens(self._path))
        except AuthSettingsError as exc:
            self._records = ()
            log.error(
                "the static tokens file cannot be used; no static token is accepted until it is "
                "fixed",
                extra={
                    "event": "auth_tokens_unusable",
                    "path": str(self._path),
                    "error": exc.message,
                },
            )
            return
        self._records = records
        log.info(
            "re-read the static tokens file",
            extra={
                "event": "auth_tokens_reloaded",
                "path": str(self._path),
                "tokens": len(records),
            },
        )
