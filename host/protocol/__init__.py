"""The protocol layer: JSON-RPC framing, MCP revisions, and the tool-call core they share.

Knows tools only as compiled machines and nothing of YAML or HTTP: a transport hands
:meth:`Endpoint.handle` the bytes of a message (and, over HTTP, its headers) and sends back the
:class:`Reply`. :func:`make_endpoint` wires the parts the way every transport wants them.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

from host.machine import Machine
from host.protocol.core import Asked, Finished, OnceStore, Step, ToolHost, can_elicit_form
from host.protocol.endpoint import Endpoint, Reply, Revision, Sessions
from host.protocol.legacy import LegacyProtocol
from host.protocol.modern import MODERN_VERSIONS, ModernProtocol
from host.protocol.sessions import LEGACY_VERSIONS, LegacyOptions, SessionSealer
from host.protocol.state import Binding, CallState, StateSealer
from host.protocol.streams import EventStream
from host.spec.model import Server
from host.store.base import Store

__all__ = [
    "LEGACY_VERSIONS",
    "MODERN_VERSIONS",
    "Asked",
    "Binding",
    "CallState",
    "Endpoint",
    "EventStream",
    "Finished",
    "LegacyOptions",
    "LegacyProtocol",
    "ModernProtocol",
    "OnceStore",
    "Reply",
    "Revision",
    "SessionSealer",
    "Sessions",
    "StateSealer",
    "Step",
    "ToolHost",
    "can_elicit_form",
    "make_endpoint",
]


def make_endpoint(
    server: Server,
    machines: Mapping[str, Machine],
    store: Store,
    *,
    keys: Sequence[str],
    state_ttl_s: float,
    data_dir: Path,
    legacy: LegacyOptions | None = None,
) -> Endpoint:
    """An endpoint serving ``machines`` as ``server``, in every revision the host speaks.

    Args:
        server: The server spec.
        machines: The compiled tools, in ``tools/list`` order.
        store: The shared store (at-most-once acts, legacy sessions' shared records).
        keys: ``requestState`` and session id signing keys, newest first.
        state_ttl_s: How long a ``requestState`` (and a fallback question's id) stays valid.
        data_dir: The host's data directory, for handlers.
        legacy: Legacy sessions' timeouts (defaults when None).
    """
    # NOTE: an act's record must outlive every state that can still ask for it.
    host = ToolHost(server, machines, store, data_dir=data_dir, act_ttl_s=state_ttl_s + 60)
    sealer = StateSealer(keys, state_ttl_s)
    options = legacy or LegacyOptions()
    sessions = SessionSealer(keys, options.session_ttl_s)
    old = LegacyProtocol(host, sessions, store, options, fallback_ttl_s=state_ttl_s)
    modern = ModernProtocol(host, sealer, keepalive_s=options.keepalive_s)
    return Endpoint([old, modern], sessions=old)
