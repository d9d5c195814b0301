"""Legacy sessions (2025-11-25, 2025-06-18, 2025-03-26): version negotiation and signed session ids.

A session's data (its negotiated revision, whether its client can show forms, who it is) travels
inside the ``Mcp-Session-Id`` itself, signed with the same keys as ``requestState``: any gunicorn
worker, or any instance sharing the secret, can serve any request of any session without asking
the others. The store holds only what must be shared after the fact: the tombstone of a session
ended with DELETE, so it is refused everywhere until it would have expired anyway, and the log
level the client set with ``logging/setLevel``, so every worker forwards the same log messages.
"""

from __future__ import annotations

import hashlib
import logging
import secrets
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from itsdangerous import BadData, URLSafeSerializer

from host.protocol.core import can_elicit_form
from host.protocol.state import digest

__all__ = [
    "LEGACY_VERSIONS",
    "LegacyOptions",
    "Session",
    "SessionSealer",
    "knows_forms",
    "negotiate",
    "principal_digest",
]

log = logging.getLogger("host.protocol.sessions")

#: The legacy revisions served, newest first.
LEGACY_VERSIONS: tuple[str, ...] = ("2025-11-25", "2025-06-18", "2025-03-26")

_SALT = "host.session.v1"
_VERSION = 1
#: A session id is a few hundred bytes; anything far larger is not one of ours.
_MAX_TOKEN = 4096


def negotiate(requested: str) -> str:
    """The revision to answer ``initialize`` with: the client's when served, else the newest."""
    return requested if requested in LEGACY_VERSIONS else LEGACY_VERSIONS[0]


def knows_forms(version: str) -> bool:
    """Whether a revision has form elicitation at all (it arrived in 2025-06-18)."""
    return version >= "2025-06-18"


@dataclass(frozen=True)
class LegacyOptions:
    """How long legacy sessions and their questions live.

    Attributes:
        answer_timeout_s: How long a question on a call's stream waits for the user's answer;
            the call then ends with a result that says so.
        session_ttl_s: How long a session id stays valid after ``initialize``; the client then
            gets 404 and starts a new session.
        keepalive_s: How often a waiting stream sends an SSE comment, so proxies keep it open.
    """

    answer_timeout_s: float = 300.0
    session_ttl_s: float = 86_400.0
    keepalive_s: float = 15.0


@dataclass(frozen=True)
class Session:
    """One legacy session, as its signed id carries it.

    Attributes:
        id: A random id, the key of the session's tombstone and of its questions.
        version: The negotiated revision.
        forms: Whether questions can go to the client as ``elicitation/create`` requests: the
            revision knows form elicitation and the client declared it.
        client: The client's self-reported ``{name, version}``, for logs only.
        principal: The digest of the principal that opened it.
        expires: Unix time after which the id is refused.
    """

    id: str
    version: str
    forms: bool
    client: Mapping[str, str]
    principal: str
    expires: float

    @property
    def structured(self) -> bool:
        """Whether results may carry ``structuredContent`` (2025-06-18 on)."""
        return self.version >= "2025-06-18"

    @property
    def tombstone(self) -> str:
        """The store key that marks this session as ended."""
        return "session-ended:" + self.id

    @property
    def log_level_key(self) -> str:
        """The store key of the log level the client set (``logging/setLevel``)."""
        return "log-level:" + self.id

    @property
    def tag(self) -> str:
        """A short, non-secret name for the session in log lines."""
        return digest(["session", self.id])[:10]


def principal_digest(principal: str) -> str:
    """The principal as a session id carries it: digested, so the id does not show it."""
    return digest(["principal", principal])


class SessionSealer:
    """Mints and opens signed session ids.

    Args:
        keys: Signing keys, newest first (``HOST_SECRET``): the first signs, all verify.
        ttl_s: How long a session id stays valid.
        clock: The time source (tests pass their own).
    """

    def __init__(
        self, keys: Sequence[str], ttl_s: float, *, clock: Callable[[], float] = time.time
    ) -> None:
        if not keys or any(not k for k in keys):
            raise ValueError("the session sealer needs at least one non-empty key")
        self.ttl_s = ttl_s
        self._clock = clock
        # NOTE: itsdangerous signs with the last key; ours are newest first.
        self._serializer = URLSafeSerializer(
            list(reversed(keys)),
            salt=_SALT,
            signer_kwargs={"digest_method": hashlib.sha256},
        )

    def start(
        self, version: str, capabilities: Mapping[str, Any], client: Any, principal: str
    ) -> tuple[Session, str]:
        """A new session for an ``initialize``, and its id for the ``Mcp-Session-Id`` header."""
        session = Session(
            id=secrets.token_urlsafe(12),
            version=version,
            forms=knows_forms(version) and can_elicit_form(capabilities),
            client=_client_info(client),
            principal=principal_digest(principal),
            expires=round(self._clock() + self.ttl_s, 3),
        )
        payload = {
            "v": _VERSION,
            "s": session.id,
            "r": session.version,
            "f": session.forms,
            "c": dict(session.client),
            "p": session.principal,
            "x": session.expires,
        }
        token = self._serializer.dumps(payload)
        return session, token if isinstance(token, str) else token.decode("ascii")

    def open(self, token: str, principal: str) -> Session | None:
        """The session a client's id names, or None when it is not a live id of this caller.

        Reasons (forged, expired, another caller's) go to the log, never to the client.
        """
        reason = self._check(token, principal)
        if isinstance(reason, Session):
            return reason
        log.info("session id refused", extra={"event": "session_refused", "reason": reason})
        return None

    def _check(self, token: str, principal: str) -> Session | str:
        if not token or len(token) > _MAX_TOKEN:
            return "empty or too long"
        try:
            payload = self._serializer.loads(token)
        except BadData:
            return "bad signature or encoding"
        try:
            if not isinstance(payload, dict) or payload["v"] != _VERSION:
                return "unknown version"
            session = Session(
                id=payload["s"],
                version=payload["r"],
                forms=payload["f"],
                client=payload["c"],
                principal=payload["p"],
                expires=payload["x"],
            )
        except (KeyError, TypeError):
            return "malformed payload"
        if not (
            isinstance(session.id, str)
            and session.version in LEGACY_VERSIONS
            and isinstance(session.forms, bool)
            and isinstance(session.client, dict)
            and isinstance(session.expires, int | float)
        ):
            return "malformed payload"
        if self._clock() > session.expires:
            return "expired"
        if session.principal != principal_digest(principal):
            return "another caller's"
        return session


def _client_info(client: Any) -> dict[str, str]:
    """The client's name and version, short, for logs (the rest of ``clientInfo`` is dropped)."""
    if not isinstance(client, Mapping):
        return {}
    kept = {k: client.get(k) for k in ("name", "version")}
    return {k: v[:64] for k, v in kept.items() if isinstance(v, str)}
