"""The pages' sign-in sessions, kept in the store so that ending one ends every copy of its cookie.

A browser's cookie carries only a random session id, signed by the pages; the store keeps the
session under a digest of that id (:func:`session_key`), so someone who reads the store learns no
cookie. A session holds who signed in, with which scopes, and the *proof* that lets the host check
the person again at each step exactly as an API call would be checked (a static token's digest,
or the sealed access token of a sign-in with the issuer). Sign out deletes it; so do
``host sessions revoke`` and a check that finds the proof no longer good. Both backends keep it
with an expiry of exactly its duration.
"""

from __future__ import annotations

import hashlib
import json
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from host.store.checks import check_ttl
from host.store.records import iso

__all__ = ["PageSession", "SessionBook", "SessionRecords", "session_key"]


def session_key(session_id: str) -> str:
    """Where the session a cookie names is kept: a digest of its id, never the id."""
    return hashlib.sha256(session_id.encode("utf-8")).hexdigest()[:32]


@dataclass(frozen=True)
class PageSession:
    """One signed-in person's session.

    Attributes:
        key: :func:`session_key` of the id in its cookie (what ``host sessions`` shows).
        principal: Who signed in; method: how (``static`` or ``jwt``).
        scopes: The scopes held at sign-in (each step checks them again).
        proof: What proves the person again (a static token's digest, or a sealed access token).
        created, expires: Unix times.
    """

    key: str
    principal: str
    method: str
    scopes: tuple[str, ...]
    proof: str
    created: float
    expires: float

    def to_json(self) -> str:
        """The session as the store keeps it (its key aside)."""
        return json.dumps(
            {"p": self.principal, "m": self.method, "s": list(self.scopes), "f": self.proof,
             "c": self.created, "x": self.expires},
            separators=(",", ":"), ensure_ascii=False,
        )  # fmt: skip

    @classmethod
    def from_json(cls, key: str, text: str | bytes) -> PageSession | None:
        """The session stored as ``text``; None for a value this host cannot read."""
        try:
            data: Any = json.loads(text)
            return cls(
                key, str(data["p"]), str(data["m"]), tuple(map(str, data["s"])),
                str(data["f"]), float(data["c"]), float(data["x"]),
            )  # fmt: skip
        except (ValueError, KeyError, TypeError):
            return None

    def describe(self) -> dict[str, Any]:
        """The session as ``host sessions list`` shows it: never its proof."""
        return {
            "session": self.key,
            "principal": self.principal,
            "method": self.method,
            "scopes": list(self.scopes),
            "created": iso(self.created),
            "expires": iso(self.expires),
        }


class SessionRecords(Protocol):
    """The role a backend writes for sessions: each method one atomic step."""

    def open(self, session: PageSession, ttl_s: float) -> None:
        """Keep ``session`` for ``ttl_s`` seconds."""
        ...

    def get(self, key: str) -> PageSession | None:
        """The live session kept under ``key``, or None."""
        ...

    def listed(self, principal: str | None) -> list[PageSession]:
        """The live sessions of ``principal`` (None: everyone's), oldest first."""
        ...

    def end(self, keys: Sequence[str]) -> int:
        """Delete the sessions kept under ``keys``; how many were live."""
        ...


class SessionBook:
    """The store's sessions, as the pages and ``host sessions`` use them.

    Args:
        records: The backend's role.
    """

    def __init__(self, records: SessionRecords) -> None:
        self._records = records

    def open(self, session: PageSession) -> None:
        """Keep ``session`` until it expires."""
        ttl_s = session.expires - time.time()
        check_ttl(ttl_s, "a session's time left")
        self._records.open(session, ttl_s)

    def get(self, session_id: str) -> PageSession | None:
        """The live session a cookie's ``session_id`` names, or None."""
        found = self._records.get(session_key(session_id))
        return found if found is not None and found.expires > time.time() else None

    def listed(self, principal: str | None = None) -> list[PageSession]:
        """The live sessions of ``principal`` (None: everyone's), oldest first."""
        return [s for s in self._records.listed(principal) if s.expires > time.time()]

    def end(self, session_id: str) -> bool:
        """End the session a cookie's ``session_id`` names (sign out); whether it was live."""
        return self._records.end([session_key(session_id)]) > 0

    def revoke(self, key: str | None = None, principal: str | None = None) -> int:
        """End the session shown as ``key``, or every one of ``principal`` (None: all); how many."""
        if key is not None and principal is None:
            return self._records.end([key])
        keys = [s.key for s in self._records.listed(principal) if key in (None, s.key)]
        return self._records.end(keys) if keys else 0
