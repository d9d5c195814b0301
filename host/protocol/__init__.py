"""The protocol layer: JSON-RPC framing, MCP revisions, and the tool-call core they share.

Knows tools only as compiled machines and nothing of YAML or HTTP: a transport hands
:meth:`Endpoint.handle` the bytes of a message with its :class:`RequestContext` and sends back the
:class:`Reply`. :func:`make_endpoint` wires the parts the one way every transport uses.

Where things live: the two eras are subpackages, ``modern`` (``requestState``, the ``_meta``
envelope and its headers) and ``legacy`` (sessions, the stream relay, the fallback tool, the GET
stream); everything they share is here. ``calls`` sets up a ``tools/call`` and advances it for both;
``core`` advances a call one round (``steps`` is what it takes and gives back, ``endings`` how a
call ends without its act, ``elicit_modes`` which ways of asking a client declared); ``answers``
owns which answers count; ``streams`` runs a call beside its request so progress and log messages go
out live; ``revisions`` is the one table of MCP revisions and ``adapt`` translates for older ones at
the edge; ``elicitation`` is the kill switches' one decision; ``seal`` and ``digests`` make the
tokens a client carries; ``events`` tells observers about rounds and refused requests; ``approvals``
binds a round's remembered approvals to its caller and tool.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

from host.machine import Machine
from host.protocol.answers import Ledger
from host.protocol.context import RequestContext
from host.protocol.core import ToolHost
from host.protocol.elicit_modes import can_elicit_form
from host.protocol.elicitation import Elicitation
from host.protocol.endpoint import Endpoint, Era, Reply, Sessions
from host.protocol.events import (
    LogObserver,
    Observer,
    Refusal,
    RefusalObserver,
    Round,
    notify_refused,
)
from host.protocol.gate import Opened
from host.protocol.legacy.era import LegacyProtocol
from host.protocol.legacy.sessions import LegacyOptions, SessionSealer
from host.protocol.modern.era import ModernProtocol
from host.protocol.modern.state import Binding, StateSealer
from host.protocol.redaction import FieldCipher
from host.protocol.revisions import LEGACY_VERSIONS, MODERN_VERSIONS, REVISIONS, Revision
from host.protocol.steps import Asked, Call, Finished, Step
from host.protocol.streams import EventStream
from host.protocol.url_asks import UrlAskBook
from host.spec.model import Server
from host.store import Store

__all__ = [
    "LEGACY_VERSIONS",
    "MODERN_VERSIONS",
    "REVISIONS",
    "Asked",
    "Binding",
    "Call",
    "Elicitation",
    "Endpoint",
    "Era",
    "EventStream",
    "Finished",
    "Ledger",
    "LegacyOptions",
    "LegacyProtocol",
    "LogObserver",
    "ModernProtocol",
    "Observer",
    "Refusal",
    "RefusalObserver",
    "Reply",
    "RequestContext",
    "Revision",
    "Round",
    "SessionSealer",
    "Sessions",
    "StateSealer",
    "Step",
    "ToolHost",
    "can_elicit_form",
    "make_endpoint",
    "notify_refused",
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
    observers: Sequence[Observer] = (LogObserver(),),
    elicitation: Elicitation | None = None,
    pending_limit: int | None = 20,
    record_max: int = 16 * 1024,
    approval_opened: Opened | None = None,
    url_asks: UrlAskBook | None = None,
    withdraw: Callable[[str], bool] | None = None,
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
        observers: Told about every round of every call (the log line by default), and
            those that want them about refused requests.
        elicitation: Whether tools may ask (by default what ``server`` says).
        pending_limit: The most approval requests one authenticated caller may have pending.
        record_max: Bytes of arguments an approval request keeps whole (``HOST_RECORD_MAX``).
        approval_opened: Told about each approval request a call opens (the webhook).
        url_asks: Where URL asks keep their pages (by default the store's, their
            ``HOST_PUBLIC_URL`` unknown: each request's own host).
        withdraw: Withdraws the approval request of a cancelled task (the approvals
            service's :meth:`~host.approvals.service.ApprovalsService.withdraw`).
    """
    cipher = FieldCipher(keys)
    # NOTE: an act's record must outlive every state that can still ask for it.
    host = ToolHost(
        server,
        machines,
        store,
        data_dir=data_dir,
        act_ttl_s=state_ttl_s + 60,
        observers=observers,
        elicitation=elicitation,
        pending_limit=pending_limit,
        record_max=record_max,
        approval_opened=approval_opened,
        url_asks=url_asks or UrlAskBook(store, cipher),
    )
    options = legacy or LegacyOptions()
    old = _legacy_era(host, store, keys, options, state_ttl_s=state_ttl_s, cipher=cipher)
    modern = _modern_era(host, keys, options, state_ttl_s, observers=observers, withdraw=withdraw)
    return Endpoint([old, modern], sessions=old)


def _legacy_era(
    host: ToolHost,
    store: Store,
    keys: Sequence[str],
    options: LegacyOptions,
    *,
    state_ttl_s: float,
    cipher: FieldCipher,
) -> LegacyProtocol:
    """The legacy revisions: signed session ids, and fallback questions as long as a state."""
    return LegacyProtocol(
        host,
        SessionSealer(keys, options.session_ttl_s),
        store,
        options,
        fallback_ttl_s=state_ttl_s,
        cipher=cipher,
    )


def _modern_era(
    host: ToolHost,
    keys: Sequence[str],
    options: LegacyOptions,
    state_ttl_s: float,
    *,
    observers: Sequence[Observer],
    withdraw: Callable[[str], bool] | None,
) -> ModernProtocol:
    """The modern revisions: sealed ``requestState``, kept alive as legacy streams are."""
    sealer = StateSealer(keys, state_ttl_s, observers=observers)
    return ModernProtocol(host, sealer, keepalive_s=options.keepalive_s, withdraw=withdraw)
