"""Admission per caller: a request past its principal's or its session's limit gets HTTP 429.

Each worker counts what it serves (see :mod:`host.limits`): the requests each authenticated
principal has in flight, and the GET streams each legacy session holds. A slot is given back when
the reply is written, or, for a streamed reply, when the stream ends or the client goes.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any

from host.auth import Identity
from host.limits import CALLER, LimitSettings, Slots, limit_error

__all__ = ["Admission", "Held"]


class Held:
    """The slots one request holds; :meth:`close` gives them all back, once."""

    def __init__(self, taken: list[tuple[Slots, str]], principal: str | None) -> None:
        self.principal = principal
        self._taken = taken

    def close(self) -> None:
        """Give back every slot held."""
        taken, self._taken = self._taken, []
        for slots, key in taken:
            slots.give(key)

    def stream(self, chunks: Iterable[bytes]) -> Iterable[bytes]:
        """``chunks``, served under this request's caller, its slots given back at their end."""
        return _HeldStream(self, iter(chunks))


class Admission:
    """One worker's counts of what each caller holds.

    Args:
        limits: The limits.
        principals: Whether callers are authenticated (else no principal is limited).
    """

    def __init__(self, limits: LimitSettings, principals: bool) -> None:
        self.principals = principals
        self.calls = Slots(limits.calls_in_flight)
        self.streams = Slots(limits.streams_per_session)

    def principal(self, identity: Identity) -> str | None:
        """The principal to limit; None for anonymous callers (everyone at once)."""
        return identity.principal if self.principals else None

    def enter(self, identity: Identity, session: str | None = None) -> Held:
        """Take a call slot (and a stream slot of ``session``, for a GET stream).

        Raises:
            ProtocolError: HTTP 429, naming the limit the caller is at.
        """
        principal = self.principal(identity)
        taken: list[tuple[Slots, str]] = []
        if principal is not None:
            if not self.calls.take(principal):
                raise limit_error(
                    "calls_in_flight", self.calls.most, "HOST_LIMIT_CALLS_IN_FLIGHT", principal
                )
            taken.append((self.calls, principal))
        if session is not None:
            if not self.streams.take(session):
                Held(taken, principal).close()
                raise limit_error(
                    "streams_per_session",
                    self.streams.most,
                    "HOST_LIMIT_STREAMS_PER_SESSION",
                    "this session",
                )
            taken.append((self.streams, session))
        return Held(taken, principal)


class _HeldStream:
    """A streamed reply that keeps its request's slots, and its caller, until it ends."""

    def __init__(self, held: Held, chunks: Iterator[bytes]) -> None:
        self._held = held
        self._chunks = chunks

    def __iter__(self) -> Iterator[bytes]:
        return self

    def __next__(self) -> bytes:
        token = CALLER.set(self._held.principal)
        try:
            return next(self._chunks)
        except BaseException:
            self.close()
            raise
        finally:
            CALLER.reset(token)

    def close(self) -> None:
        """End the stream (the server calls this when the client goes, or the reply ends)."""
        try:
            close: Any = getattr(self._chunks, "close", None)
            if close is not None:
                close()
        finally:
            self._held.close()
