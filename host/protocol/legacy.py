"""The legacy revisions (2025-11-25, 2025-06-18, 2025-03-26): sessions opened with ``initialize``.

A legacy client sends ``initialize`` without the modern ``_meta``; the answer names the revision
(the client's when served, else the newest legacy one) and carries a signed ``Mcp-Session-Id``
the client sends on every later message. Then ``notifications/initialized``, ``ping``,
``tools/list`` and ``tools/call``; DELETE ends the session. The tools are the same machines the
modern revision serves, with the same answer checks and the same at-most-once act; only how
questions travel differs:

* a client that declared form elicitation (2025-06-18 on) gets them as ``elicitation/create``
  requests on the call's SSE stream (:mod:`host.protocol.relay`);
* any other gets them inside the tool result, and answers through ``sendElicitationResult``
  (:mod:`host.protocol.fallback`), a tool listed for its session only.

Results follow the session's revision: no ``resultType``, ``structuredContent`` only from
2025-06-18, and content blocks the revision knows (:func:`host.machine.content.for_revision`).
Progress reports of a call with a ``progressToken``, and, once the client set a level with
``logging/setLevel``, its handlers' log messages (:mod:`host.protocol.messages`), go out on the
call's POST stream. Session
errors keep their HTTP meaning (400 without a session id, 404 for an unknown, ended or expired
one); every other JSON-RPC error in a session is sent with HTTP 200.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterator, Mapping
from typing import Any

from host.errors import ProtocolError
from host.machine import Outcome
from host.protocol.core import Finished, ToolHost
from host.protocol.endpoint import Reply
from host.protocol.fallback import FALLBACK_TOOL, Fallback, fallback_tool
from host.protocol.headers import decode_header_value
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
from host.protocol.messages import read_level
from host.protocol.modern import is_modern_message
from host.protocol.relay import Relay
from host.protocol.sessions import LEGACY_VERSIONS, LegacyOptions, Session, SessionSealer, negotiate
from host.protocol.streams import (
    NO_BUFFERING,
    Event,
    EventStream,
    Notifier,
    accepts_stream,
    progress_token,
    stream_after,
)
from host.store.base import Store

__all__ = ["LegacyProtocol", "legacy_tool"]

log = logging.getLogger("host.protocol.legacy")

#: Members of a ``Tool`` that a revision does not know yet, by revision.
_NEWER_TOOL_MEMBERS: Mapping[str, tuple[str, ...]] = {
    "2025-11-25": (),
    "2025-06-18": ("icons", "execution"),
    "2025-03-26": ("icons", "execution", "title", "outputSchema"),
}

Method = Callable[[Request, Session, str, Mapping[str, str] | None], "dict[str, Any] | Reply"]


def legacy_tool(tool: Mapping[str, Any], version: str) -> dict[str, Any]:
    """A ``Tool`` object without the members ``version`` does not know."""
    dropped = _NEWER_TOOL_MEMBERS[version]
    return {k: v for k, v in tool.items() if k not in dropped}


class LegacyProtocol:
    """The legacy revisions, and the endpoint's :class:`host.protocol.endpoint.Sessions`.

    Args:
        host: The tools and the call core (shared with the modern revision).
        sessions: Mints and opens session ids.
        store: The shared store: session tombstones, relayed answers, fallback questions.
        options: Answer timeout and keep-alive interval.
        fallback_ttl_s: How long a ``sendElicitationResult`` id stays valid.
    """

    def __init__(
        self,
        host: ToolHost,
        sessions: SessionSealer,
        store: Store,
        options: LegacyOptions | None = None,
        *,
        fallback_ttl_s: float = 600.0,
    ) -> None:
        self.host = host
        self.sessions = sessions
        self.store = store
        self.options = options or LegacyOptions()
        self.relay = Relay(host, store, self.options)
        self.fallback = Fallback(host, store, fallback_ttl_s)
        # NOTE: the fallback tool is useful only where some tool can ask and asking is allowed.
        self._can_fall_back = host.server.elicitation_enabled and any(
            m.asks for m in host.machines.values()
        )
        self._methods: dict[str, Method] = {
            "ping": self._empty,
            "logging/setLevel": self._set_level,
            "tools/list": self._tools_list,
            "tools/call": self._tools_call,
        }

    def accepts(self, message: Message, headers: Mapping[str, str] | None) -> bool:
        """``initialize`` and messages of a session; never a message that claims 2026-07-28."""
        if is_modern_message(message, headers):
            return False
        if message.method == "initialize":
            return True
        headers = headers or {}
        version = decode_header_value(headers.get("mcp-protocol-version"))
        return "mcp-session-id" in headers or version in LEGACY_VERSIONS

    def handle(self, message: Message, headers: Mapping[str, str] | None, principal: str) -> Reply:
        """Answer one message of a session (or the ``initialize`` that opens one).

        Raises:
            ProtocolError: 400 without a session id or with an unsupported version header; 404
                for an unknown, ended or expired session; a method's own errors (HTTP 200).
        """
        if message.method == "initialize":
            if isinstance(message, Notification):
                return Reply(202)
            return self._initialize(message, principal)
        session = self._session(headers, principal)
        if isinstance(message, Notification):
            # NOTE: initialized, cancelled, roots changes: nothing to act on for a tool host.
            return Reply(202)
        method = self._methods.get(message.method)
        try:
            if method is None:
                raise error(
                    METHOD_NOT_FOUND,
                    f"Method not found: {message.method}",
                    {"method": message.method},
                )
            answer = method(message, session, principal, headers)
        except ProtocolError as exc:
            raise ProtocolError(exc.code, exc.message, exc.data, 200) from None
        if isinstance(answer, Reply):
            return answer
        return Reply(200, success(message.id, answer))

    def handle_response(
        self, response: Response, headers: Mapping[str, str] | None, principal: str
    ) -> Reply:
        """Take a client's answer to a question asked on a call's stream: 202 when accepted."""
        session = self._session(headers, principal)
        self.relay.deliver(session, response)
        return Reply(202)

    def end_session(self, headers: Mapping[str, str] | None, principal: str) -> Reply:
        """End the session the headers name; every worker refuses it from now on (204)."""
        session = self._session(headers, principal)
        ttl = max(session.expires - time.time(), 1.0)
        self.store.put(session.tombstone, "1", ttl)
        log.info("session ended", extra={"event": "session_ended", "session": session.tag})
        return Reply(204)

    def _initialize(self, message: Request, principal: str) -> Reply:
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
        version = negotiate(requested)
        session, token = self.sessions.start(
            version, capabilities, params.get("clientInfo"), principal
        )
        log.info(
            "session started",
            extra={
                "event": "session_started",
                "session": session.tag,
                "version": version,
                "requested": requested[:32],
                "forms": session.forms,
                "client": session.client.get("name"),
            },
        )
        result: dict[str, Any] = {
            "protocolVersion": version,
            "capabilities": {"tools": {"listChanged": False}, "logging": {}},
            "serverInfo": self.host.server_info,
        }
        if self.host.server.instructions:
            result["instructions"] = self.host.server.instructions
        return Reply(200, success(message.id, result), {"Mcp-Session-Id": token})

    def _session(self, headers: Mapping[str, str] | None, principal: str) -> Session:
        headers = headers or {}
        token = headers.get("mcp-session-id")
        if not token:
            raise ProtocolError(
                INVALID_REQUEST,
                "Bad Request: the Mcp-Session-Id header is required; send initialize first to "
                "start a session",
                None,
                400,
            )
        session = self.sessions.open(token.strip(), principal)
        if session is None or self.store.get(session.tombstone) is not None:
            raise ProtocolError(
                INVALID_REQUEST,
                "Session not found: it ended or expired, or the id is not valid; send initialize "
                "to start a new session",
                None,
                404,
            )
        # NOTE: a session's own revision governs; a header naming another legacy revision is
        # tolerated (clients have sent 2025-03-26 on newer sessions), an unknown one is not.
        sent = decode_header_value(headers.get("mcp-protocol-version"))
        if sent and sent not in LEGACY_VERSIONS:
            raise ProtocolError(
                INVALID_REQUEST,
                f"Bad Request: unsupported MCP-Protocol-Version {sent!r}; this session speaks "
                f"{session.version}",
                {"supported": list(LEGACY_VERSIONS), "requested": sent},
                400,
            )
        return session

    def _empty(
        self,
        message: Request,
        session: Session,
        principal: str,
        headers: Mapping[str, str] | None,
    ) -> dict[str, Any]:
        return {}

    def _set_level(
        self,
        message: Request,
        session: Session,
        principal: str,
        headers: Mapping[str, str] | None,
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
        return self._can_fall_back and not session.forms

    def _tools_list(
        self,
        message: Request,
        session: Session,
        principal: str,
        headers: Mapping[str, str] | None,
    ) -> dict[str, Any]:
        if message.params.get("cursor") is not None:
            raise error(INVALID_PARAMS, "Invalid cursor: tools/list is not paged")
        tools = [legacy_tool(tool, session.version) for tool in self.host.tools()]
        if self._offers_fallback(session):
            tools.append(legacy_tool(fallback_tool(), session.version))
        return {"tools": tools}

    def _tools_call(
        self,
        message: Request,
        session: Session,
        principal: str,
        headers: Mapping[str, str] | None,
    ) -> dict[str, Any] | Reply:
        """A call; one with a ``progressToken`` or a session log level runs beside the request.

        So its progress reports and log messages go out on the POST's stream as they come, when
        the client reads event streams (:mod:`.streams`); the reply stays plain JSON unless a
        notification comes before the result.
        """
        if not accepts_stream(headers):
            return self._call(message, session, principal, None)
        token = progress_token(message.params)
        level = self.store.get(session.log_level_key)
        if token is None and level is None:
            return self._call(message, session, principal, None)
        name = message.params.get("name")
        notifier = Notifier(token, name if isinstance(name, str) else "", level)
        running = notifier.start(lambda n: self._call(message, session, principal, n))
        first = running.first()
        if first is None:
            return running.result()
        stream = stream_after(
            message.id,
            message.method,
            first,
            running,
            lambda value: self._finish(message.id, value),
            self.options.keepalive_s,
        )
        return Reply(200, headers=NO_BUFFERING, stream=stream)

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
        principal: str,
        notifier: Notifier | None,
    ) -> dict[str, Any] | Reply:
        name = message.params.get("name")
        if not isinstance(name, str):
            raise error(INVALID_PARAMS, "tools/call needs params.name, the tool's name")
        arguments = message.params.get("arguments")
        if arguments is None:
            arguments = {}
        if not isinstance(arguments, dict):
            raise error(INVALID_PARAMS, "params.arguments must be an object")
        if name == FALLBACK_TOOL and self._offers_fallback(session):
            outcome = self.fallback.answer(
                session,
                arguments,
                principal,
                notifier.report if notifier else None,
                notifier.logs if notifier else None,
            )
            return _result(outcome, session)
        machine = self.host.machine(name)
        problem = machine.check_arguments(arguments)
        if problem is not None:
            return _result(problem, session)
        step = self.host.advance(
            machine,
            arguments,
            principal=principal,
            progress=notifier.report if notifier else None,
            logs=notifier.logs if notifier else None,
        )
        if isinstance(step, Finished):
            return _result(step.outcome, session)
        if session.forms:
            stream = self.relay.stream(
                session, message.id, machine, arguments, principal, step, notifier
            )
            return Reply(200, headers=NO_BUFFERING, stream=stream)
        outcome = self.fallback.ask(session, machine, arguments, principal, step)
        return _result(outcome, session)


def _result(outcome: Outcome, session: Session) -> dict[str, Any]:
    """A ``CallToolResult`` in what the session's revision knows (structured content, blocks)."""
    return outcome.to_result(structured=session.structured, version=session.version)
