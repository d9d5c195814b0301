"""Limits per caller: how much of one worker a principal or a session may hold at once.

One principal must never take a worker from the others: each authenticated principal may have at
most ``calls_in_flight`` requests in flight in a worker, and its handlers at most
``handler_threads`` of the worker's handler pool (an act past its time limit keeps its thread, so
this is the share a hanging act cannot exceed). Each session may hold at most
``streams_per_session`` GET streams and ``questions_per_session`` open questions. These counts
are each worker's own, in memory: a worker's threads are what a flood takes, so its own
counters are the honest and cheap guard (one lock, no store round trip on the hot path);
across ``w`` workers a caller holds at most ``w`` times each.
Anonymous callers (a host without auth settings) are everyone at once, so they are never limited
as one principal; per-session limits apply to them too. The one limit counted in the store is
``sessions`` per principal: a session outlives its requests and may move between workers and
instances, so only the store knows how many a principal holds (counted at ``initialize``, where
one past the limit evicts the least recently used, :mod:`host.protocol.legacy.places`).
"""

from __future__ import annotations

import threading
from collections.abc import Mapping
from contextvars import ContextVar
from dataclasses import dataclass

from host.errors import ProtocolError, SettingsError

__all__ = [
    "CALLER",
    "LIMIT_EXCEEDED",
    "RETRY_AFTER_S",
    "LimitSettings",
    "Slots",
    "limit_error",
    "note_refused",
    "take_refused",
]

#: The JSON-RPC error code of a request refused by a limit (with HTTP 429).
LIMIT_EXCEEDED = -32029
#: Seconds a refused caller is asked to wait (``Retry-After``).
RETRY_AFTER_S = 1

#: The limited principal of the request this thread serves; None: not limited (anonymous).
CALLER: ContextVar[str | None] = ContextVar("host_caller", default=None)

#: Whether the request this thread served last was refused over a limit (HTTP 429).
_refused = threading.local()


def note_refused() -> None:
    """The request this thread serves is answered 429: its caller is over one of its limits.

    NOTE: read by the served worker (:mod:`host.serve.worker`), which queues that connection's
    next request behind everyone else's: a principal flooding past its limits then waits for
    the others, instead of every other principal waiting behind its queue of refusals.
    """
    _refused.flag = True


def take_refused() -> bool:
    """Whether this thread's last request was refused over a limit (and forget it)."""
    refused = bool(getattr(_refused, "flag", False))
    _refused.flag = False
    return refused


@dataclass(frozen=True)
class LimitSettings:
    """``HOST_LIMIT_*`` and ``HOST_RECORD_MAX``: the per-caller limits of one worker.

    Attributes:
        calls_in_flight: Requests one principal may have in flight in one worker.
        handler_threads: Handler pool threads one principal's handlers may hold in one worker.
        streams_per_session: GET streams one legacy session may hold open in one worker.
        sessions: Legacy sessions one principal may hold open at once, counted in the store
            (across workers and instances): a session holds its place until it is ended
            (``DELETE``), goes unused for its TTL, or a new one past the limit evicts it.
        questions_per_session: Questions one legacy session may hold open on call streams in
            one worker (each holds its request's thread until answered or timed out).
        record_max: Bytes of arguments, or of one answer's content, kept whole in an audit record;
            larger ones are kept as their digest, size and a prefix.
    """

    calls_in_flight: int = 64
    handler_threads: int = 64
    streams_per_session: int = 2
    record_max: int = 16 * 1024
    sessions: int = 64
    questions_per_session: int = 16

    @classmethod
    def from_env(cls, env: Mapping[str, str]) -> LimitSettings:
        """The limits from ``env``, defaults where unset.

        Raises:
            SettingsError: A value that is not a whole number from 1.
        """
        return cls(
            _count(env, "HOST_LIMIT_CALLS_IN_FLIGHT", cls.calls_in_flight),
            _count(env, "HOST_LIMIT_HANDLER_THREADS", cls.handler_threads),
            _count(env, "HOST_LIMIT_STREAMS_PER_SESSION", cls.streams_per_session),
            _count(env, "HOST_RECORD_MAX", cls.record_max),
            _count(env, "HOST_LIMIT_SESSIONS", cls.sessions),
            _count(env, "HOST_LIMIT_QUESTIONS_PER_SESSION", cls.questions_per_session),
        )


class Slots:
    """Counted slots per key, at most ``most`` each: one lock, one dict entry per holder.

    Args:
        most: The most slots one key may hold.
    """

    def __init__(self, most: int) -> None:
        self.most = most
        self._held: dict[str, int] = {}
        self._lock = threading.Lock()

    def take(self, key: str) -> bool:
        """Take a slot for ``key``; False (nothing taken) when it holds ``most`` already."""
        with self._lock:
            held = self._held.get(key, 0)
            if held >= self.most:
                return False
            self._held[key] = held + 1
            return True

    def give(self, key: str) -> None:
        """Give back a slot ``key`` took."""
        with self._lock:
            held = self._held.get(key, 0) - 1
            if held > 0:
                self._held[key] = held
            else:
                # NOTE: dropped at zero, so keys that come and go (sessions) never pile up.
                self._held.pop(key, None)

    def held(self, key: str) -> int:
        """How many slots ``key`` holds now."""
        with self._lock:
            return self._held.get(key, 0)


def limit_error(limit: str, value: int, setting: str, who: str) -> ProtocolError:
    """The JSON-RPC error (HTTP 429) of a request refused by ``limit``, naming it."""
    return ProtocolError(
        LIMIT_EXCEEDED,
        f"Too many requests: {who} holds {value} {limit.replace('_', ' ')}, the most allowed "
        f"({setting}); retry after {RETRY_AFTER_S} s",
        {"limit": limit, "value": value, "setting": setting, "retryAfter": RETRY_AFTER_S},
        429,
    )


def _count(env: Mapping[str, str], name: str, default: int) -> int:
    raw = env.get(name, "").strip()
    if not raw:
        return default
    if not raw.isdigit() or int(raw) < 1:
        raise SettingsError(f"{name} must be a whole number from 1, got {raw!r}", name)
    return int(raw)
