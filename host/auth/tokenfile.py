"""The static tokens file: one JSON document of token hashes, names and scopes.

Only a SHA-256 digest of each token is stored, so the file does not grant access to whoever reads
it; it does decide who gets in, so it is created ``0600``, refused when someone else may change it
(:mod:`host.auth.strict_modes`: another owner, group or others allowed to write it or its folder),
and rewritten atomically (a new file renamed over the old one) under a lock, so a running host
re-reading it never sees half a file. ::

    {"format": "host-tokens/1",
     "tokens": [{"name": "ci", "scopes": ["tickets:read"], "created": "2026-08-01T09:30:00Z",
                 "sha256": "<hex digest of the token>"}]}
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import os
import re
import secrets
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from host.auth.errors import AuthSettingsError
from host.auth.scopes import check_scope
from host.auth.strict_modes import directory_problem, file_problem

__all__ = [
    "TOKEN_PREFIX",
    "TokenRecord",
    "check_name",
    "check_permissions",
    "create_token",
    "digest",
    "ensure_directory",
    "parse_tokens",
    "read_tokens",
    "revoke_token",
]

FORMAT = "host-tokens/1"

#: Every static token starts with this, so it is told from a JWT at a glance (and by scanners).
TOKEN_PREFIX = "host_"

_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._@-]{0,63}")


@dataclass(frozen=True)
class TokenRecord:
    """One static token as stored: never the token itself.

    Attributes:
        name: The token's name, which is the principal of whoever presents it.
        scopes: The scopes it grants.
        created: When it was created, ISO 8601 in UTC.
        sha256: The token's SHA-256 digest.
    """

    name: str
    scopes: tuple[str, ...]
    created: str
    sha256: bytes

    def to_json(self) -> dict[str, Any]:
        """The record as stored in the file."""
        return {
            "name": self.name,
            "scopes": list(self.scopes),
            "created": self.created,
            "sha256": self.sha256.hex(),
        }


def digest(token: str) -> bytes:
    """The SHA-256 digest of ``token`` (the token is random, so no salt or stretching is needed)."""
    return hashlib.sha256(token.encode("utf-8", "surrogatepass")).digest()


def check_name(name: str) -> str | None:
    """Why ``name`` cannot name a token, or None when it can."""
    if _NAME.fullmatch(name):
        return None
    return (
        f"{name!r} is not a valid token name: 1 to 64 letters, digits and . _ @ -, starting with "
        "a letter or digit"
    )


def check_permissions(path: Path, found: os.stat_result) -> None:
    """Refuse a tokens file that someone but the serving user (or root) may change.

    Raises:
        AuthSettingsError: Another user owns the file, or group or others may write it or
            replace it in its folder; the message says how to fix it.
    """
    problem = file_problem(path, found) or directory_problem(path)
    if problem is not None:
        raise AuthSettingsError(problem)


def read_tokens(path: Path) -> list[TokenRecord]:
    """The records in the tokens file at ``path`` (none when it does not exist yet).

    Raises:
        AuthSettingsError: The file is unreadable, malformed, or may be changed by someone else
            (see :func:`check_permissions`).
    """
    try:
        with path.open("rb") as file:
            check_permissions(path, os.fstat(file.fileno()))
            raw = file.read()
    except FileNotFoundError:
        problem = directory_problem(path)
        if problem is not None:
            raise AuthSettingsError(problem) from None
        return []
    except OSError as exc:
        raise AuthSettingsError(f"cannot read the tokens file {path}: {exc.strerror}") from None
    return parse_tokens(raw, path)


def parse_tokens(raw: bytes, path: Path) -> list[TokenRecord]:
    """The records in a tokens file's content.

    Raises:
        AuthSettingsError: The content is not a tokens file.
    """
    try:
        document = json.loads(raw)
    except ValueError as exc:
        raise AuthSettingsError(f"the tokens file {path} is not valid JSON: {exc}") from None
    if not isinstance(document, dict) or document.get("format") != FORMAT:
        raise AuthSettingsError(
            f'{path} is not a tokens file (no "format": "{FORMAT}"); make one with '
            "`host token create`"
        )
    entries = document.get("tokens")
    if not isinstance(entries, list):
        raise AuthSettingsError(f'the tokens file {path} has no "tokens" list')
    records = []
    for index, entry in enumerate(entries):
        try:
            records.append(_record(entry))
        except (KeyError, TypeError, ValueError) as exc:
            raise AuthSettingsError(
                f"the tokens file {path}: entry {index + 1} is malformed ({exc})"
            ) from None
    return records


def _record(entry: Any) -> TokenRecord:
    name, scopes, created, sha = entry["name"], entry["scopes"], entry["created"], entry["sha256"]
    if not isinstance(name, str) or check_name(name):
        raise ValueError(f"bad name {name!r}")
    if not isinstance(scopes, list) or not all(
        isinstance(s, str) and not check_scope(s) for s in scopes
    ):
        raise ValueError(f"bad scopes {scopes!r}")
    if not isinstance(created, str):
        raise ValueError("bad created time")
    raw = bytes.fromhex(sha)
    if len(raw) != hashlib.sha256().digest_size:
        raise ValueError("bad sha256")
    return TokenRecord(name=name, scopes=tuple(scopes), created=created, sha256=raw)


def create_token(path: Path, name: str, scopes: list[str]) -> tuple[str, TokenRecord]:
    """Make a new random token called ``name``, store its digest, and return it (once).

    Raises:
        AuthSettingsError: A bad name or scope, a name already taken, or a file problem.
    """
    problem = check_name(name) or next(filter(None, map(check_scope, scopes)), None)
    if problem:
        raise AuthSettingsError(problem)
    token = TOKEN_PREFIX + secrets.token_urlsafe(32)
    record = TokenRecord(
        name=name,
        scopes=tuple(dict.fromkeys(scopes)),
        created=time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        sha256=digest(token),
    )
    ensure_directory(path)
    with _locked(path):
        records = read_tokens(path)
        if any(r.name == name for r in records):
            raise AuthSettingsError(
                f"a token named {name!r} already exists in {path}; revoke it first "
                f"(host token revoke {name}) or choose another name"
            )
        _write(path, [*records, record])
    return token, record


def ensure_directory(path: Path) -> bool:
    """Create the tokens file's directory, mode 0700, when it is missing; True if it was.

    NOTE: the file holds token digests only, but its directory is kept private too, so no
    other user can swap the file for one that holds their own token.

    Raises:
        AuthSettingsError: It is missing and cannot be created; the message says how to.
    """
    directory = path.parent
    if directory.is_dir():
        return False
    try:
        directory.mkdir(mode=0o700, parents=True)
    except OSError as exc:
        raise AuthSettingsError(
            f"the directory of the tokens file {path} does not exist and cannot be created "
            f"({exc.strerror}): create it as a user who may (sudo install -d -m 700 -o "
            f"$(id -un) {directory}), or set HOST_AUTH_TOKENS to a file in a directory you own"
        ) from None
    return True


def revoke_token(path: Path, name: str) -> TokenRecord:
    """Remove the token called ``name``; the removed record.

    Raises:
        AuthSettingsError: No such token, or a file problem.
    """
    with _locked(path):
        records = read_tokens(path)
        kept = [r for r in records if r.name != name]
        if len(kept) == len(records):
            raise AuthSettingsError(f"there is no token named {name!r} in {path}")
        _write(path, kept)
    return next(r for r in records if r.name == name)


@contextlib.contextmanager
def _locked(path: Path) -> Iterator[None]:
    """Hold an exclusive lock beside ``path``, so two writers never lose each other's change."""
    lock_path = path.with_name(path.name + ".lock")
    try:
        fd = os.open(lock_path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
    except FileNotFoundError:
        raise AuthSettingsError(
            f"there is no tokens file {path}: its directory {path.parent} does not exist; "
            "host token create makes both"
        ) from None
    except OSError as exc:
        raise AuthSettingsError(f"cannot lock the tokens file {path}: {exc.strerror}") from None
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)


def _write(path: Path, records: list[TokenRecord]) -> None:
    """Replace the file with ``records``, atomically, mode 0600."""
    content = json.dumps(
        {"format": FORMAT, "tokens": [r.to_json() for r in records]}, indent=2
    ).encode()
    temporary = path.with_name(f".{path.name}.{os.getpid()}.{secrets.token_hex(4)}.tmp")
    try:
        fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o600)
        with os.fdopen(fd, "wb") as file:
            file.write(content + b"\n")
            file.flush()
            os.fsync(file.fileno())
        os.replace(temporary, path)
        directory = os.open(path.parent, os.O_RDONLY)
        try:
            os.fsync(directory)
        finally:
            os.close(directory)
    except OSError as exc:
        with contextlib.suppress(OSError):
            os.unlink(temporary)
        raise AuthSettingsError(f"cannot write the tokens file {path}: {exc.strerror}") from None
