"""The sealed ``requestState`` of a multi-round tool call (MCP 2026-07-28).

Between rounds the server keeps nothing: what a call needs from its earlier rounds travels to the
client and back inside ``requestState``: compact JSON in URL-safe base64, signed with itsdangerous
(HMAC-SHA256). The client can read it but cannot change it. It carries:

* the answers of earlier rounds (a retry carries only the latest round's answers);
* a nonce, the same in every round of one call: the key of the act's at-most-once record;
* the keys asked in the round that minted it, and a digest of every question asked so far, so
  answers are only ever applied to the questions they answer;
* its bindings: a digest of the caller, the tool, a digest of the arguments, and an expiry.

Any failure to open a state (forged, tampered, expired, bound to another caller, tool or arguments,
or not a state at all) is answered with one fixed error, so a client learns nothing about which
check failed; the reason goes to the log.
"""

from __future__ import annotations

import base64
import hashlib
import json
import logging
import secrets
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import cached_property, lru_cache
from typing import Any

from itsdangerous import BadData, Serializer

from host.errors import ProtocolError
from host.protocol.jsonrpc import INVALID_PARAMS, error

__all__ = [
    "INVALID_STATE_MESSAGE",
    "Binding",
    "CallState",
    "StateSealer",
    "canonical_json",
    "digest",
    "new_nonce",
]

log = logging.getLogger("host.protocol.state")

INVALID_STATE_MESSAGE = "Invalid or expired requestState"

_SALT = "host.requestState.v1"
_VERSION = 1
#: A state is a few hundred bytes; anything far larger is not one of ours (checked before the HMAC).
_MAX_TOKEN = 64 * 1024


def canonical_json(value: Any) -> str:
    """One text per JSON value, whatever the key order: the input of every digest."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


class _CompactJson:
    """itsdangerous's payload serializer: compact JSON in URL-safe base64, never compressed.

    NOTE: a state is a few hundred bytes; zlib (what URLSafeSerializer adds) saved little and cost
    more than the HMAC on every round.
    """

    @staticmethod
    def dumps(value: Any) -> str:
        text = json.dumps(value, separators=(",", ":"), ensure_ascii=False)
        return base64.urlsafe_b64encode(text.encode("utf-8")).rstrip(b"=").decode("ascii")

    @staticmethod
    def loads(text: str | bytes) -> Any:
        raw = text.encode("ascii") if isinstance(text, str) else text
        return json.loads(base64.urlsafe_b64decode(raw + b"=" * (-len(raw) % 4)))


def digest(value: Any) -> str:
    """A short, URL-safe SHA-256 digest (128 bits) of a JSON value's canonical text."""
    raw = hashlib.sha256(canonical_json(value).encode("utf-8")).digest()[:16]
    return base64.urlsafe_b64encode(raw).rstrip(b"=").decode("ascii")


@lru_cache(maxsize=1024)
def _principal_digest(principal: str) -> str:
    return digest(["principal", principal])


def new_nonce() -> str:
    """A fresh random nonce for one call."""
    return secrets.token_urlsafe(16)


@dataclass(frozen=True)
class Binding:
    """What a state is bound to: checked again on every round.

    Attributes:
        principal: The caller's identity (``anonymous`` without authentication).
        tool: The tool's name.
        arguments: The call's arguments, compared by digest of their canonical JSON.
    """

    principal: str
    tool: str
    arguments: Mapping[str, Any]

    def principal_digest(self) -> str:
        """The principal, digested so the state does not show it."""
        return _principal_digest(self.principal)

    def arguments_digest(self) -> str:
        """The arguments' digest (computed once per binding)."""
        return self._arguments_digest

    @cached_property
    def _arguments_digest(self) -> str:
        return digest(self.arguments)


@dataclass(frozen=True)
class CallState:
    """What one call carries from round to round.

    Attributes:
        nonce: Constant across the rounds of one call; the at-most-once key of its act.
        answers: Answers of the rounds before the one this state is sent back with.
        asked: Keys of the questions asked in the round that minted this state: the only keys
            whose ``inputResponses`` the next round takes.
        digests: The digest of every question asked so far, by key (see
            :meth:`host.machine.Question.digest`), so answers apply only to what was asked.
        round: The number of the round this state will be sent back with (2 for the first retry).
    """

    nonce: str
    answers: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    asked: tuple[str, ...] = ()
    digests: Mapping[str, str] = field(default_factory=dict)
    round: int = 2


class StateSealer:
    """Seals and opens request states with a list of keys.

    Args:
        keys: Secret keys, newest first: the first signs, every one verifies, so a key can be
            rotated in (put it first) and the old one retired a TTL later.
        ttl_s: How long a sealed state stays valid, in seconds.
        clock: The time source (tests pass their own).

    Raises:
        ValueError: No key, an empty key, or a TTL that is not positive.
    """

    def __init__(
        self, keys: Sequence[str], ttl_s: float, *, clock: Callable[[], float] = time.time
    ) -> None:
        if not keys or any(not k for k in keys):
            raise ValueError("the request-state sealer needs at least one non-empty key")
        if not ttl_s > 0:
            raise ValueError(f"the request-state TTL must be positive, got {ttl_s!r}")
        self.ttl_s = ttl_s
        self._clock = clock
        # NOTE: itsdangerous orders keys oldest to newest and signs with the last; ours are
        # newest first, as operators write them in HOST_SECRET.
        self._serializer: Serializer[str] = Serializer(
            list(reversed(keys)),
            salt=_SALT,
            serializer=_CompactJson,
            signer_kwargs={"digest_method": hashlib.sha256},
        )

    def seal(self, state: CallState, binding: Binding) -> str:
        """The opaque ``requestState`` text for ``state``, bound to ``binding``."""
        payload = {
            "v": _VERSION,
            "n": state.nonce,
            "p": binding.principal_digest(),
            "t": binding.tool,
            "d": binding.arguments_digest(),
            "a": {k: dict(v) for k, v in state.answers.items()},
            "k": list(state.asked),
            "q": dict(state.digests),
            "r": state.round,
            "x": round(self._clock() + self.ttl_s, 3),
        }
        token = self._serializer.dumps(payload)
        return token if isinstance(token, str) else token.decode("ascii")

    def open(self, token: Any, binding: Binding) -> CallState:
        """Verify a state sent back by a client and return what it carries.

        Raises:
            ProtocolError: -32602 "Invalid or expired requestState", whatever the reason (which is
                logged as a warning).
        """
        reason = self._check(token, binding)
        if isinstance(reason, CallState):
            return reason
        log.warning(
            "requestState rejected",
            extra={"event": "request_state_rejected", "reason": reason, "tool": binding.tool},
        )
        raise self.invalid()

    @staticmethod
    def invalid() -> ProtocolError:
        """The one error every failure to open a state gets."""
        return error(INVALID_PARAMS, INVALID_STATE_MESSAGE)

    def _check(self, token: Any, binding: Binding) -> CallState | str:
        if not isinstance(token, str) or not token:
            return "not a non-empty string"
        if len(token) > _MAX_TOKEN:
            return "too long"
        try:
            payload = self._serializer.loads(token)
        except BadData:
            return "bad signature or encoding"
        try:
            return self._unpack(payload, binding)
        except (KeyError, TypeError, ValueError):
            return "malformed payload"

    def _unpack(self, payload: Any, binding: Binding) -> CallState | str:
        if not isinstance(payload, dict) or payload["v"] != _VERSION:
            return "unknown version"
        expiry = payload["x"]
        if not isinstance(expiry, int | float) or self._clock() > expiry:
            return "expired"
        if payload["t"] != binding.tool:
            return "bound to another tool"
        if payload["d"] != binding.arguments_digest():
            return "bound to other arguments"
        if payload["p"] != binding.principal_digest():
            return "bound to another caller"
        answers = payload["a"]
        asked = payload["k"]
        nonce, questions, round_ = payload["n"], payload["q"], payload["r"]
        if not (
            isinstance(answers, dict)
            and all(isinstance(v, dict) for v in answers.values())
            and isinstance(asked, list)
            and all(isinstance(k, str) for k in asked)
            and isinstance(nonce, str)
            and isinstance(questions, dict)
            and all(isinstance(v, str) for v in questions.values())
            and isinstance(round_, int)
        ):
            raise ValueError("malformed payload")
        return CallState(nonce, answers, tuple(asked), questions, round_)
