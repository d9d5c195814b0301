"""Legacy sessions: version negotiation and signed session ids.

A session's data (its negotiated revision, whether its client can show forms, who it is) travels
inside the ``Mcp-Session-Id`` itself, signed with the same keys as ``requestState``: any gunicorn
worker, or any instance sharing the secret, can serve any request of any session without asking
the others. The store holds only what must be shared: the session's place among its principal's
open sessions (:mod:`host.protocol.legacy.places`), taken at ``initialize``, renewed while in use
and given back by DELETE, so a principal's sessions are bounded everywhere and an ended or evicted
session is refused everywhere with no row left behind; and the log level the client set with
``logging/setLevel``, so every worker forwards the same log messages.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from host import ids
from host.protocol.digests import digest, principal_digest
from host.protocol.elicit_modes import can_elicit_form, can_elicit_url
from host.protocol.revisions import REVISIONS, Revision
from host.protocol.seal import Sealer

__all__ = ["LegacyOptions", "Session", "SessionSealer", "log_level_key", "session_tag"]

log = logging.getLogger("host.protocol.sessions")

_SALT = "host.session.v2"
#: A session id is a few hundred bytes; anything far larger is not one of ours.
_MAX_TOKEN = 4096


@dataclass(frozen=True)
class LegacyOptions:
    """How long legacy sessions and their questions live.

    Attributes:
        answer_timeout_s: How long a question on a call's stream waits for the user's answer;
            the call then ends with a result that says so.
        session_ttl_s: How long a session id stays valid after ``initialize``; the client then
            gets 404 and starts a new session.
        keepalive_s: How often a waiting stream sends an SSE comment, so proxies keep it open.
        listeners: The most GET streams (:mod:`host.protocol.legacy.listen`) one process keeps open:
            each holds a worker thread while it is open (a quarter of ``host serve``'s 1024
            threads per worker).
        sessions: The most sessions one authenticated principal may hold open at once
            (``HOST_LIMIT_SESSIONS``); a new one past it evicts the least recently used.
        questions_per_session: The most questions one session may hold open on call streams
            in one process (``HOST_LIMIT_QUESTIONS_PER_SESSION``).
    """

    answer_timeout_s: float = 300.0
    session_ttl_s: float = 86_400.0
    keepalive_s: float = 15.0
    listeners: int = 256
    sessions: int = 64
    questions_per_session: int = 16


@dataclass(frozen=True)
class Session:
    """One legacy session, as its signed id carries it.

    Attributes:
        id: A random id, the key of the session's place and of its questions.
        version: The negotiated revision.
        forms: Whether questions can go to the client as ``elicitation/create`` requests: the
            revision knows form elicitation and the client declared it.
        client: The client's self-reported ``{name, version}``, for logs only.
        principal: The digest of the principal that opened it.
        expires: Unix time after which the id is refused.
        urls: Whether URL asks can go to the client (``elicitation/create`` with ``mode:
            url``): the revision knows URL mode and the client declared ``elicitation.url``.
    """

    id: str
    version: str
    forms: bool
    client: Mapping[str, str]
    principal: str
    expires: float
    urls: bool = False

    @property
    def revision(self) -> Revision:
        """What the session's revision knows."""
        return REVISIONS[self.version]

    @property
    def place(self) -> tuple[str, str]:
        """The store place (group, member) that keeps this session open: its principal's."""
        return "sessions:" + self.principal, self.id

    @property
    def log_level_key(self) -> str:
        """The store key of the log level the client set (``logging/setLevel``)."""
        return log_level_key(self.id)

    @property
    def tag(self) -> str:
        """A short, non-secret name for the session in log lines."""
        return session_tag(self.id)


def log_level_key(session_id: str) -> str:
    """The store key of the log level a session's client set (``logging/setLevel``)."""
    return "log-level:" + session_id


def session_tag(session_id: str) -> str:
    """A short, non-secret name for a session in log lines."""
    return digest(["session", session_id])[:10]


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
        self._sealer = Sealer(keys, _SALT, ttl_s, max_length=_MAX_TOKEN, clock=clock)

    def start(
        self, revision: Revision, capabilities: Mapping[str, Any], client: Any, principal: str
    ) -> tuple[Session, str]:
        """A new session for an ``initialize``, and its id for the ``Mcp-Session-Id`` header."""
        payload = {
            "s": ids.token(12),
            "r": revision.version,
            "f": revision.forms and can_elicit_form(capabilities),
            "u": revision.url_mode and can_elicit_url(capabilities),
            "c": _client_info(client),
            "p": principal_digest(principal),
        }
        token = self._sealer.seal(payload)
        session = self._session(self._sealer.open(token))
        assert isinstance(session, Session)
        return session, token

    def open(self, token: str, principal: str) -> Session | None:
        """The session a client's id names, or None when it is not a live id of this caller.

        Reasons (forged, expired, another caller's) go to the log, never to the client.
        """
        session = self._session(self._sealer.open(token))
        if isinstance(session, Session) and session.principal != principal_digest(principal):
            session = "another caller's"
        if isinstance(session, Session):
            return session
        log.info("session id refused", extra={"event": "session_refused", "reason": session})
        return None

    @staticmethod
    def _session(payload: dict[str, Any] | str) -> Session | str:
        if isinstance(payload, str):
            return payload
        try:
            session = Session(
                id=payload["s"],
                version=payload["r"],
                forms=payload["f"],
                client=payload["c"],
                principal=payload["p"],
                expires=payload["x"],
                # NOTE: a session id minted before URL asks existed reads as "no URL mode".
                urls=payload.get("u", False),
            )
        except KeyError:
            return "malformed payload"
        if not (
            isinstance(session.id, str)
            and session.version in REVISIONS
            and not session.revision.modern
            and isinstance(session.forms, bool)
            and isinstance(session.urls, bool)
            and isinstance(session.client, dict)
            and isinstance(session.principal, str)
        ):
            return "malformed payload"
        return session


def _client_info(client: Any) -> dict[str, str]:
    """The client's name and version, short, for logs (the rest of ``clientInfo`` is dropped)."""
    if not isinstance(client, Mapping):
        return {}
    kept = {k: client.get(k) for k in ("name", "version")}
    return {k: v[:64] for k, v in kept.items() if isinstance(v, str)}
