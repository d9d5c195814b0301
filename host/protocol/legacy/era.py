"""The legacy revisions (see :mod:`host.protocol.revisions`): sessions opened with ``initialize``.

A legacy client sends ``initialize`` without the modern ``_meta``; the answer names the revision
(the client's when served, else the newest legacy one) and carries a signed ``Mcp-Session-Id``
the client sends on every later message. Then ``notifications/initialized``, ``ping``,
``logging/setLevel``, ``tools/list`` and ``tools/call``; DELETE ends the session, and GET opens its
stream of ``notifications/tools/list_changed`` (:mod:`host.protocol.legacy.listen`). The tools are
the same machines the modern revision serves, with the same ledger of answers and the same
at-most-once act; only how questions travel differs:

* a client that declared form elicitation (in a revision that has it) gets them as
  ``elicitation/create`` requests on the call's SSE stream (:mod:`host.protocol.legacy.relay`);
* any other gets them inside the tool result, and answers through ``sendElicitationResult``
  (:mod:`host.protocol.legacy.fallback`), a tool listed for its session only.

Tools, forms and results follow the session's revision (:mod:`host.protocol.adapt`). Progress
reports of a call with a ``progressToken``, and, once the client set a level with
``logging/setLevel``, its handlers' log messages (:mod:`host.protocol.messages`), go out on the
call's POST stream. Session errors keep their HTTP meaning (400 without a session id, 404 for an
unknown, ended or expired one); every other JSON-RPC error in a session is sent with HTTP 200.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from typing import Any

from host.errors import ProtocolError, ScopeError
from host.protocol import adapt
from host.protocol.calls import Pending, first_round, object_param, tool_name
from host.protocol.context import RequestContext, trace_context
from host.protocol.core import ToolHost
from host.protocol.endpoint import Reply
from host.protocol.header_values import decode_header_value
from host.protocol.jsonrpc import (
    INVALID_PARAMS,
    INVALID_REQUEST,
    METHOD_NOT_FOUND,
    Message,
    Notification,
    Request,
    Response,
    error,
    success,
)
from host.protocol.legacy.fallback import FALLBACK_TOOL, Fallback, fallback_tool
from host.protocol.legacy.listen import Listeners
from host.protocol.legacy.places import SessionPlaces
from host.protocol.legacy.relay import Relay
from host.protocol.legacy.sessions import LegacyOptions, Session, SessionSealer, log_level_key
from host.protocol.messages import read_level
from host.protocol.redaction import FieldCipher
from host.protocol.revisions import LEGACY_VERSIONS, is_modern_message, legacy_revision
from host.protocol.streams import NO_BUFFERING, Event, EventStream, Notifier, notifier_for, respond
from host.store import Store

__all__ = ["LegacyProtocol"]

log = logging.getLogger("host.protocol.legacy")

Method = Callable[[Request, Session, RequestContext], "dict[str, Any] | Reply"]


class LegacyProtocol:
    """The legacy revisions, and the endpoint's :class:`host.protocol.endpoint.Sessions`.

    Args:
        host: The tools and the call core (shared with the modern revision).
        sessions: Mints and opens session ids.
        store: The shared store: sessions' places, relayed answers, fallback questions.
        options: Answer timeout and keep-alive interval.
        fallback_ttl_s: How long a ``sendElicitationResult`` id stays valid.
        cipher: Encrypts redacted fields in the relay's and the fallback's store records.
    """

    def __init__(
        self,
        host: ToolHost,
        sessions: SessionSealer,
        store: Store,
        options: LegacyOptions | None = None,
        *,
        fallback_ttl_s: float = 600.0,
        cipher: FieldCipher,
    ) -> None:
        self.host = host
        self.sessions = sessions
        self.store = store
        self.options = options or LegacyOptions()
        self.relay = Relay(host, store, self.options, cipher)
        self.fallback = Fallback(host, store, fallback_ttl_s, cipher)
        self.places = SessionPlaces(store, self.options)
        self.listeners = Listeners(host, store, self.options, self.places)
        self._methods: dict[str, Method] = {
            "ping": self._empty,
            "logging/setLevel": self._set_level,
            "tools/list": self._tools_list,
            "tools/call": self._tools_call,
        }

    def accepts(self, message: Message, request: RequestContext) -> bool:
        """``initialize`` and messages of a session; never a message that claims the modern era."""
        if is_modern_message(message, request):
            return False
        if message.method == "initialize":
            return True
        version = decode_header_value(request.header("mcp-protocol-version"))
        return request.session is not None or version in LEGACY_VERSIONS

    def handle(self, message: Message, request: RequestContext) -> Reply:
        """Answer one message of a session (or the ``initialize`` that opens one).

        Raises:
            ProtocolError: 400 without a session id or with an unsupported version header; 404
                for an unknown, ended or expired session; a method's own errors (HTTP 200).
        """
        if message.method == "initialize":
            if isinstance(message, Notification):
                return Reply(202)
            return self._initialize(message, request)
        session = self._session(request)
        if isinstance(message, Notification):
            if message.method == "notifications/cancelled":
                self.relay.cancel(session, message.params.get("requestId"))
            # NOTE: initialized, roots changes: nothing to act on for a tool host.
            return Reply(202)
        method = self._methods.get(message.method)
        try:
            if method is None:
                raise error(
                    METHOD_NOT_FOUND,
                    f"Method not found: {message.method}",
                    {"method": message.method},
                )
            answer = method(message, session, request)
        except ScopeError:
            raise  # NOTE: authorization keeps its HTTP meaning (403) in every era
        except ProtocolError as exc:
            if exc.http_status == 429:
                raise  # NOTE: and so do limits (429, with Retry-After)
            raise ProtocolError(exc.code, exc.message, exc.data, 200) from None
        if isinstance(answer, Reply):
            return answer
        return Reply(200, success(message.id, answer))

    def handle_response(self, response: Response, request: RequestContext) -> Reply:
        """Take a client's answer to a question asked on a call's stream: 202 when accepted."""
        self.relay.deliver(self._session(request), response)
        return Reply(202)

    def listen(
        self, request: RequestContext, stopping: threading.Event, gone: Callable[[], bool]
    ) -> Reply:
        """Open the session's GET stream (:mod:`host.protocol.legacy.listen`).

        Raises:
            ProtocolError: 400 without a session id, 404 for an unknown, ended or expired one.
        """
        return self.listeners.open(self._session(request), stopping, gone)

    def end_session(self, request: RequestContext) -> Reply:
        """End the session the request names; every worker refuses it from now on (204)."""
        session = self._session(request)
        # NOTE: the place goes first: once it is gone the id is refused everywhere, and the
        # rest is only tidying that would otherwise wait for the session's expiry.
        self.places.give(session)
        self._tidy(session.id)
        log.info("session ended", extra={"event": "session_ended", "session": session.tag})
        return Reply(204)

    def _tidy(self, session_id: str) -> None:
        """Delete what an ended or evicted session kept beside its place, before it expires."""
        self.store.delete(log_level_key(session_id))
        self.listeners.forget(session_id)

    def _initialize(self, message: Request, request: RequestContext) -> Reply:
        params = message.params
        requested = params.get("protocolVersion")
        if not isinstance(requested, str):
            raise error(
                INVALID_PARAMS,
                "initialize needs params.protocolVersion, the revision the client speaks",
            )
        capabilities = params.get("capabilities", {})
        if not isinstance(capabilities, Mapping):
            raise error(INVALID_PARAMS, "initialize: params.capabilities must be an object")
        revision = legacy_revision(requested)
        session, token = self.sessions.start(
            revision, capabilities, params.get("clientInfo"), request.owner
        )
        for evicted in self.places.take(session, limited=request.identity.method != "none"):
            self._tidy(evicted)
        log.info(
            "session started",
            extra={
                "event": "session_started",
                "session": session.tag,
                "version": revision.version,
                "requested": requested[:32],
                "forms": session.forms,
                "client": session.client.get("name"),
            },
        )
        result: dict[str, Any] = {
            "protocolVersion": revision.version,
            "capabilities": {"tools": {"listChanged": True}, "logging": {}},
            "serverInfo": self.host.server_info,
        }
        if self.host.server.instructions:
            result["instructions"] = self.host.server.instructions
        return Reply(200, success(message.id, result), {"Mcp-Session-Id": token})

    def _session(self, request: RequestContext) -> Session:
        if not request.session:
            raise ProtocolError(
                INVALID_REQUEST,
                "Bad Request: the Mcp-Session-Id header is required; send initialize first to "
                "start a session",
                None,
                400,
            )
        session = self.sessions.open(request.session.strip(), request.owner)
        if session is None or not self.places.holds(session):
            raise ProtocolError(
                INVALID_REQUEST,
                "Session not found: it ended, expired or was evicted by newer sessions of its "
                "caller, or the id is not valid; send initialize to start a new session",
                None,
                404,
            )
        # NOTE: a session's own revision governs; a header naming another legacy revision is
        # tolerated (clients have sent the oldest one on newer sessions), an unknown one is not.
        sent = decode_header_value(request.header("mcp-protocol-version"))
        if sent and sent not in LEGACY_VERSIONS:
            raise ProtocolError(
                INVALID_REQUEST,
                f"Bad Request: unsupported MCP-Protocol-Version {sent!r}; this session speaks "
                f"{session.version}",
                {"supported": list(LEGACY_VERSIONS), "requested": sent},
                400,
            )
        return session

    def _empty(self, message: Request, session: Session, request: RequestContext) -> dict[str, Any]:
        return {}

    def _set_level(
        self, message: Request, session: Session, request: RequestContext
    ) -> dict[str, Any]:
        """``logging/setLevel``: the session's log level, kept where every worker finds it.

        NOTE: the session id is signed and cannot change, so the level lives in the store,
        under the session's id, for as long as the session may live.
        """
        level = read_level(message.params.get("level"), "logging/setLevel params.level")
        ttl = max(session.expires - time.time(), 1.0)
        self.store.put(session.log_level_key, level, ttl)
        log.info(
            "log level set",
            extra={"event": "log_level_set", "session": session.tag, "level": level},
        )
        return {}

    def _offers_fallback(self, session: Session) -> bool:
        """Whether the session gets the fallback tool: it cannot show forms, and tools may ask.

        NOTE: ``elicitation: {fallback: false}`` refuses the channel: such a session's calls
        that would ask get the -32021 error a client without elicitation gets.
        """
        return self.host.server.fallback_enabled and self.host.asks and not session.forms

    def _answers_fallback(self, session: Session) -> bool:
        """Whether ``sendElicitationResult`` is served: also while questions are switched off.

        NOTE: an answer to a question asked before the kill switch finishes its call if no
        more questions are due, as a modern client's ``requestState`` round does; a call that
        would ask again gets ELICITATION_DISABLED from the core.
        """
        return self.host.server.fallback_enabled and self.host.may_have_asked and not session.forms

    def _tools_list(
        self, message: Request, session: Session, request: RequestContext
    ) -> dict[str, Any]:
        if message.params.get("cursor") is not None:
            raise error(INVALID_PARAMS, "Invalid cursor: tools/list is not paged")
        revision = session.revision
        tools = [adapt.tool(tool, revision) for tool in self.host.tools()]
        if self._offers_fallback(session):
            tools.append(adapt.tool(fallback_tool(), revision))
        self.listeners.seen(session)
        return {"tools": tools}

    def _tools_call(
        self, message: Request, session: Session, request: RequestContext
    ) -> dict[str, Any] | Reply:
        """A call; one with a ``progressToken`` or a session log level runs beside the request.

        So its progress reports and log messages go out on the POST's stream as they come, when
        the client reads event streams (:func:`host.protocol.streams.respond`); the reply stays
        plain JSON unless a notification comes before the result.
        """
        notifier = notifier_for(
            request.streams, message.params, lambda: self.store.get(session.log_level_key)
        )
        value = respond(
            notifier,
            lambda n: self._call(message, session, request, n),
            lambda value: self._finish(message.id, value),
            request_id=message.id,
            method=message.method,
            keepalive_s=self.options.keepalive_s,
        )
        if isinstance(value, EventStream):
            return Reply(200, headers=NO_BUFFERING, stream=value)
        return value

    @staticmethod
    def _finish(request_id: Any, value: dict[str, Any] | Reply) -> Iterator[Event]:
        """The end of a progress stream: the result, or the question stream the call became."""
        if not isinstance(value, Reply):
            yield success(request_id, value)
        elif isinstance(value.stream, EventStream):
            yield from value.stream.messages()
        else:  # pragma: no cover - a call's Reply is always a question stream
            yield value.body

    def _call(
        self,
        message: Request,
        session: Session,
        request: RequestContext,
        notifier: Notifier | None,
    ) -> dict[str, Any] | Reply:
        revision = session.revision
        # NOTE: the arguments are read before the tool is found, as the fallback tool's are.
        name, arguments = tool_name(message.params), object_param(message.params, "arguments")
        if name == FALLBACK_TOOL and self._answers_fallback(session):
            trace = trace_context(message.params, request)
            return self.fallback.answer(session, arguments, request, notifier, trace)
        ended = first_round(
            self.host,
            message.params,
            request,
            revision=revision,
            can_ask=session.forms or self._offers_fallback(session),
            can_ask_url=session.urls,
            notifier=notifier,
        )
        if not isinstance(ended, Pending):
            return ended
        # NOTE: a URL ask always goes on the stream (the core refused it without URL mode):
        # the fallback tool never carries one.
        if session.forms or any(q.on_page for q in ended.asked.questions):
            stream = self.relay.stream(session, message.id, ended, notifier)
            return Reply(200, headers=NO_BUFFERING, stream=stream)
        return adapt.result(self.fallback.ask(session, ended.call, ended.asked), revision)
