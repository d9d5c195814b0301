"""The sealed ``requestState`` of a multi-round tool call (the modern revision).

Between rounds the server keeps nothing: the call's ledger (:mod:`host.protocol.answers`) travels
to the client and back inside ``requestState``, sealed (:mod:`host.protocol.seal`) and bound to
what it was minted for: a digest of the caller, the tool, a digest of the arguments, and an
expiry. The client can read it but cannot change it.

Any failure to open a state (forged, tampered, expired, bound to another caller, tool or arguments,
or not a state at all) is answered with one fixed error, so a client learns nothing about which
check failed; the reason goes to the log.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from functools import cached_property
from typing import Any

from host.errors import ProtocolError
from host.frozen import quick_init
from host.protocol.answers import Ledger
from host.protocol.digests import digest, principal_digest
from host.protocol.events import Refusal, notify_refused
from host.protocol.jsonrpc import INVALID_PARAMS, error
from host.protocol.seal import Sealer

__all__ = ["INVALID_STATE_MESSAGE", "Binding", "StateSealer"]

log = logging.getLogger("host.protocol.state")

INVALID_STATE_MESSAGE = "Invalid or expired requestState"

_SALT = "host.requestState.v2"
#: A state is a few hundred bytes; anything far larger is not one of ours (checked before the HMAC).
_MAX_TOKEN = 64 * 1024


@quick_init
@dataclass(frozen=True)
class Binding:
    """What a state is bound to: checked again on every round.

    Attributes:
        principal: Who owns the call: the caller's :attr:`~host.auth.identity.Identity.owner`.
        tool: The tool's name.
        arguments: The call's arguments, compared by digest of their canonical JSON.
    """

    principal: str
    tool: str
    arguments: Mapping[str, Any]

    @cached_property
    def arguments_digest(self) -> str:
        """The arguments' digest (computed once per binding)."""
        return digest(self.arguments)


class StateSealer:
    """Seals a call's ledger into ``requestState``, and opens it again.

    Args:
        keys: Secret keys, newest first (``HOST_SECRET``): the first signs, every one verifies.
        ttl_s: How long a sealed state stays valid, in seconds.
        clock: The time source (tests pass their own).
        observers: Told about every state that does not open (:class:`Refusal` ``state``).

    Raises:
        ValueError: No key, an empty key, or a TTL that is not positive.
    """

    def __init__(
        self,
        keys: Sequence[str],
        ttl_s: float,
        *,
        clock: Callable[[], float] = time.time,
        observers: Sequence[object] = (),
    ) -> None:
        self._sealer = Sealer(keys, _SALT, ttl_s, max_length=_MAX_TOKEN, clock=clock)
        self.ttl_s = ttl_s
        self.observers = tuple(observers)

    def seal(self, ledger: Ledger, binding: Binding) -> str:
        """The opaque ``requestState`` text for ``ledger``, bound to ``binding``."""
        return self._sealer.seal(
            {
                "p": principal_digest(binding.principal),
                "t": binding.tool,
                "d": binding.arguments_digest,
                "l": ledger.to_payload(),
            }
        )

    def open(self, token: Any, binding: Binding) -> Ledger:
        """Verify a state sent back by a client and return the ledger it carries.

        Raises:
            ProtocolError: -32602 "Invalid or expired requestState", whatever the reason (which is
                logged as a warning).
        """
        opened = self._check(token, binding)
        if isinstance(opened, Ledger):
            return opened
        log.warning(
            "requestState rejected",
            extra={"event": "request_state_rejected", "reason": opened, "tool": binding.tool},
        )
        notify_refused(self.observers, Refusal("state", opened, binding.tool))
        raise self.invalid()

    @staticmethod
    def invalid() -> ProtocolError:
        """The one error every failure to open a state gets."""
        return error(INVALID_PARAMS, INVALID_STATE_MESSAGE)

    def _check(self, token: Any, binding: Binding) -> Ledger | str:
        payload = self._sealer.open(token)
        if isinstance(payload, str):
            return payload
        if payload.get("t") != binding.tool:
            return "bound to another tool"
        if payload.get("d") != binding.arguments_digest:
            return "bound to other arguments"
        if payload.get("p") != principal_digest(binding.principal):
            return "bound to another caller"
        try:
            return Ledger.from_payload(payload.get("l"))
        except ValueError:
            return "malformed payload"
