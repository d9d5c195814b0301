"""The modern MCP revision: stateless requests with per-request ``_meta``; questions as MRTR.

Every request says its protocol version and its client's capabilities in ``params._meta``; over
HTTP the ``MCP-Protocol-Version``, ``Mcp-Method`` and ``Mcp-Name`` headers must agree with the body.
A tool that needs the user's answers returns ``resultType: "input_required"`` with the questions
and a sealed ``requestState``; the client sends the same call again with ``inputResponses`` and
the state. A call with a ``progressToken`` sends its handlers' progress reports, and one with a
``_meta`` log level (:mod:`host.protocol.messages`) their log records at or above it, on its own
response stream, before the result (:mod:`host.protocol.streams`).

The checks run in a fixed order, first failure wins: the envelope (:mod:`.envelope`), method known
(-32601), then the method's own checks; for ``tools/call``, the tool's ``Mcp-Param-*`` headers
agree with its arguments (-32020, :mod:`.headers`) before anything else.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from host import jsonvalues
from host.machine import Machine
from host.protocol import adapt
from host.protocol.answers import Ledger
from host.protocol.calls import (
    TASKS_EXTENSION,
    Pending,
    Waiting,
    prepare,
    task_round,
    tasks_missing,
)
from host.protocol.context import RequestContext
from host.protocol.core import ToolHost
from host.protocol.elicit_modes import can_elicit_form, can_elicit_url
from host.protocol.endpoint import Reply
from host.protocol.jsonrpc import INVALID_PARAMS, METHOD_NOT_FOUND, Message, Request, error, success
from host.protocol.modern.envelope import Envelope, read_envelope
from host.protocol.modern.headers import ParamHeader, check_param_headers, param_headers
from host.protocol.modern.state import Binding, StateSealer
from host.protocol.modern.task_runs import ended_round
from host.protocol.modern.tasks import Tasks, Withdraw, declares_tasks
from host.protocol.revisions import MODERN, MODERN_VERSIONS
from host.protocol.steps import Asked
from host.protocol.streams import NO_BUFFERING, EventStream, Notifier, notifier_for, respond

__all__ = ["LIST_TTL_MS", "SERVER_INFO_KEY", "ModernProtocol"]

SERVER_INFO_KEY = "io.modelcontextprotocol/serverInfo"

#: How long clients may cache ``server/discover`` and ``tools/list``: specs change on reloads only.
LIST_TTL_MS = 300_000


class ModernProtocol:
    """The modern revision: ``server/discover``, ``tools/list`` and ``tools/call`` with MRTR.

    Args:
        host: The tools and the call core.
        sealer: Seals and opens ``requestState``.
        keepalive_s: How often a progress stream that has nothing to say sends a comment.
        withdraw: Withdraws a cancelled task's approval request (the approvals service's).
    """

    def __init__(
        self,
        host: ToolHost,
        sealer: StateSealer,
        *,
        keepalive_s: float = 15.0,
        withdraw: Withdraw | None = None,
    ) -> None:
        self.host = host
        self.tasks = Tasks(host, withdraw=withdraw)
        self._task_methods = {
            "tasks/get": self.tasks.get,
            "tasks/update": self.tasks.update,
            "tasks/cancel": self.tasks.cancel,
        }
        self.sealer = sealer
        self.keepalive_s = keepalive_s
        self._param_headers: dict[str, tuple[ParamHeader, ...]] = {
            name: param_headers(machine.input_schema) for name, machine in host.machines.items()
        }
        # NOTE: the tasks extension's hint on each tool that may run as a task (this revision's
        # list only; the extension itself defines no per-tool field).
        self._tools = [
            {**tool, "execution": {"taskSupport": m.task}} if m.task != "never" else tool
            for tool, m in zip(host.tools(), host.machines.values(), strict=True)
        ]
        self._methods = {
            "server/discover": self._discover,
            "tools/list": self._tools_list,
        }
        # NOTE: every reply's _meta, encoded once (jsonvalues.dumps writes it from its text); no
        # reply changes it.
        self._server_meta = jsonvalues.encoded(self._meta())

    def accepts(self, message: Message, request: RequestContext) -> bool:
        """Every message it is given: the modern revision is the endpoint's last resort."""
        return True

    def handle(self, message: Message, request: RequestContext) -> Reply:
        """Answer one message.

        Raises:
            ProtocolError: Any of the errors in this module's docstring, or a method's own.
        """
        if not isinstance(message, Request):
            # NOTE: the modern revision defines no notification a tool server must act on
            # (cancellation is closing the HTTP response); accepted and dropped.
            return Reply(202)
        envelope = read_envelope(message, request)
        if message.method == "tools/call":
            return self._tools_call(message, envelope, request)
        steer = self._task_methods.get(message.method)
        if steer is not None:
            if not declares_tasks(envelope.capabilities):
                raise tasks_missing()
            return Reply(200, success(message.id, steer(message.params, request, self._meta())))
        method = self._methods.get(message.method)
        if method is None:
            raise error(
                METHOD_NOT_FOUND, f"Method not found: {message.method}", {"method": message.method}
            )
        return Reply(200, success(message.id, method(message.params, envelope, request)))

    def _tools_call(self, message: Request, envelope: Envelope, request: RequestContext) -> Reply:
        """A call; one that asked for progress or log messages runs beside the request.

        So they go out live: the reply stays plain JSON (with its HTTP status) unless a
        notification comes before the result; then it is this request's event stream
        (:func:`host.protocol.streams.respond`).
        """
        notifier = notifier_for(request.streams, message.params, lambda: envelope.log_level)
        value = respond(
            notifier,
            lambda n: self._call(message.params, envelope, request, n),
            lambda result: iter([success(message.id, result)]),
            request_id=message.id,
            method=message.method,
            keepalive_s=self.keepalive_s,
        )
        if isinstance(value, EventStream):
            return Reply(200, headers=NO_BUFFERING, stream=value)
        return Reply(200, success(message.id, value))

    def _complete(self, result: Mapping[str, Any]) -> dict[str, Any]:
        # NOTE: a result's own _meta (a pending approval's) is kept beside serverInfo.
        own = result.get("_meta")
        meta = {**own, **self._server_meta} if own else self._server_meta
        return {"resultType": "complete", **result, "_meta": meta}

    def _meta(self) -> dict[str, Any]:
        return {SERVER_INFO_KEY: self.host.server_info}

    def _discover(
        self, params: Mapping[str, Any], envelope: Envelope, request: RequestContext
    ) -> dict[str, Any]:
        # NOTE: logging is deprecated in the modern revision (SEP-2577); declared while served.
        result: dict[str, Any] = {
            "supportedVersions": list(MODERN_VERSIONS),
            "capabilities": {"tools": {}, "logging": {}},
        }
        if any(m.task != "never" for m in self.host.machines.values()):
            result["capabilities"]["extensions"] = {TASKS_EXTENSION: {}}
        if self.host.server.instructions:
            result["instructions"] = self.host.server.instructions
        result.update(ttlMs=LIST_TTL_MS, cacheScope="public")
        return self._complete(result)

    def _tools_list(
        self, params: Mapping[str, Any], envelope: Envelope, request: RequestContext
    ) -> dict[str, Any]:
        if params.get("cursor") is not None:
            # NOTE: the list is never paged, so no cursor this server issued can come back.
            raise error(INVALID_PARAMS, "Invalid cursor: tools/list is not paged")
        return self._complete({"tools": self._tools, "ttlMs": LIST_TTL_MS, "cacheScope": "public"})

    def _call(
        self,
        params: Mapping[str, Any],
        envelope: Envelope,
        request: RequestContext,
        notifier: Notifier | None,
    ) -> dict[str, Any]:
        bound: list[Binding] = []  # NOTE: one binding per call, so its digest is made once

        def earlier(machine: Machine, arguments: dict[str, Any]) -> Ledger | None:
            if request.headers is not None:
                check_param_headers(self._param_headers[machine.name], arguments, request.headers)
            bound.append(Binding(request.owner, machine.name, arguments))
            token = params.get("requestState")
            if token is None:
                return None
            # NOTE: a state opens only for the very arguments it was minted for, and it was
            # minted only after they passed the input schema: later rounds need not check them.
            return self.sealer.open(token, bound[0])

        call = prepare(
            self.host,
            params,
            request,
            revision=MODERN,
            can_ask=can_elicit_form(envelope.capabilities),
            can_ask_url=can_elicit_url(envelope.capabilities),
            notifier=notifier,
            earlier=earlier,
            responses="inputResponses",
            tasks=declares_tasks(envelope.capabilities),
        )
        if isinstance(call, dict):
            return self._complete(call)
        ended = task_round(self.host, call, MODERN)
        if ended_round(ended):
            return self.tasks.start(ended, request, self._meta())
        if isinstance(ended, Pending):
            return self._input_required(ended.asked, bound[0])
        if isinstance(ended, Waiting):  # NOTE: never: ended_round took every one
            raise AssertionError("a waiting round without its task")
        return self._complete(ended)

    def _input_required(self, step: Asked, binding: Binding) -> dict[str, Any]:
        requests = {
            q.key: {"method": "elicitation/create", "params": adapt.elicitation(q, MODERN)}
            for q in step.questions
        }
        return {
            "resultType": "input_required",
            "inputRequests": requests,
            "requestState": self.sealer.seal(step.ledger, binding),
            "_meta": self._server_meta,
        }
