"""A modern MCP client of a host that answers questions the way its caller says.

``host call`` answers them in a terminal; the test kit answers them the way a test says.

``mcp.tools.call(name, arguments)`` runs the whole multi-round exchange itself: when the server
answers ``input_required`` it asks the test's answers for each question, then sends the same call
again with a new JSON-RPC id, the answers in ``inputResponses`` and ``requestState`` echoed.
Anything a real client would refuse (a question it cannot be asked, a malformed result, a server
that never stops asking) fails the test with a message that shows what happened.
"""

from __future__ import annotations

import itertools
import json
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Self

from host.client.answers import Answerer, Answers, Elicitation, UnansweredQuestion
from host.client.match import shown
from host.client.questions import on_page, questions_of
from host.client.results import CallResult, ProtocolViolation, ToolList
from host.client.tasks import follow, with_tasks
from host.client.wire import (
    CLIENT_INFO,
    META_CAPABILITIES,
    META_CLIENT_INFO,
    META_VERSION,
    MODERN,
    RawResponse,
    Transport,
    request_headers,
)

__all__ = ["DEFAULT_CAPABILITIES", "URL_CAPABILITIES", "McpClient", "Page", "Raw", "Tools"]
DEFAULT_CAPABILITIES: Mapping[str, Any] = {"elicitation": {"form": {}}}

#: What the test kit's client declares for specs with URL asks: it can answer their pages.
URL_CAPABILITIES: Mapping[str, Any] = {"elicitation": {"form": {}, "url": {}}}

Page = Callable[[Elicitation, Mapping[str, Any]], None]
"""Submits a URL ask's page with the given values, where the client can reach the host's pages
without a browser (the test kit's)."""
ACTIONS = ("accept", "decline", "cancel")


class Tools:
    """``mcp.tools``: list and call tools."""

    def __init__(self, client: McpClient) -> None:
        self._client = client

    def list(self) -> ToolList:
        """Every tool the server lists for this client, following ``nextCursor``.

        Raises:
            AssertionError: The server answered with an error or a malformed list.
        """
        __tracebackhide__ = True
        tools = ToolList()
        cursor: str | None = None
        for _page in range(100):
            params = {} if cursor is None else {"cursor": cursor}
            response = self._client.send("tools/list", params)
            result = response.result
            if not isinstance(result, Mapping) or not isinstance(result.get("tools"), list):
                raise AssertionError(f"tools/list failed: {response.error or response}")
            tools.extend(result["tools"])
            cursor = result.get("nextCursor")
            if not cursor:
                return tools
        raise ProtocolViolation("tools/list kept returning a nextCursor for 100 pages")

    def call(
        self,
        name: str,
        arguments: Mapping[str, Any] | None = None,
        *,
        answers: Answers | None = None,
    ) -> CallResult:
        """Call a tool, answering its questions, until it finishes or fails.

        Args:
            name: The tool.
            arguments: Its arguments (``{}`` when None).
            answers: Answers for this call only, instead of the ones from ``on_elicitation``.

        Raises:
            UnansweredQuestion: The tool asked something the test gives no answer for.
            ProtocolViolation: The server broke the protocol (see the message).
        """
        __tracebackhide__ = True
        return self._client.call_tool(name, dict(arguments or {}), answers)


class Raw:
    """``mcp.raw``: protocol-level requests, for tests of the protocol itself."""

    def __init__(self, client: McpClient) -> None:
        self._client = client

    def request(self, message: Any, headers: Mapping[str, str | None] | None = None) -> RawResponse:
        """Send a JSON-RPC message, filling in only what it leaves out.

        Missing ``_meta`` keys (protocol version, capabilities, client info) and missing headers
        (``Content-Type``, ``Accept``, ``MCP-Protocol-Version``, ``Mcp-Method``, ``Mcp-Name``)
        get this client's values; what the message and ``headers`` give is sent as given. A header
        given as None is left out. For bytes exactly as given, use :meth:`post`.
        """
        message = self._client.with_meta(message)
        version = self._client.protocol
        if isinstance(message, Mapping) and isinstance(message.get("params"), Mapping):
            meta = message["params"].get("_meta")
            if isinstance(meta, Mapping) and isinstance(meta.get(META_VERSION), str):
                version = meta[META_VERSION]
        sent: dict[str, str] = request_headers(message, version)
        for name, value in (headers or {}).items():
            for existing in [n for n in sent if n.lower() == name.lower()]:
                del sent[existing]
            if value is not None:
                sent[name] = value
        return self._client.post(json.dumps(message).encode(), sent, message)

    def post(
        self, body: bytes | str | Any, headers: Mapping[str, str] | None = None
    ) -> RawResponse:
        """POST exactly this body (bytes, text, or a value sent as JSON) and these headers."""
        if isinstance(body, str):
            data = body.encode()
        elif isinstance(body, bytes):
            data = body
        else:
            data = json.dumps(body).encode()
        return self._client.post(data, dict(headers or {}), body)

    def http(
        self,
        method: str,
        body: bytes | None = None,
        headers: Mapping[str, str] | None = None,
        *,
        path: str | None = None,
    ) -> RawResponse:
        """Any HTTP request to the endpoint (``GET``, ``DELETE``...), exactly as given."""
        reply = self._client.transport.send(
            method, path or self._client.path, body, dict(headers or {})
        )
        return RawResponse.from_reply(reply)


class McpClient:
    """A modern MCP client over a :class:`Transport`, made for tests.

    Args:
        transport: Carries the HTTP requests (``WsgiTransport`` for an in-process app).
        path: The MCP endpoint.
        protocol: The protocol revision sent in ``_meta`` and ``MCP-Protocol-Version``.
        capabilities: The client capabilities sent with every request; ``{}`` declares none.
        client_info: ``clientInfo`` sent with every request.
        max_rounds: Rounds of questions a call may take before the test fails.
        issue: Mints a bearer token for a principal and scopes, where the server is one this
            process vouches for (the test kit's); :meth:`client` calls it.
        page: Submits a URL ask's page with an accepted answer's ``content`` (the test kit's);
            None: a URL ask's page is left to a person and a browser.

    Attributes:
        questions: Every question asked through this client, in order.
        tools: ``list()`` and ``call()``.
        raw: Protocol-level requests.
    """

    def __init__(
        self,
        transport: Transport,
        *,
        path: str = "/mcp",
        protocol: str = MODERN,
        capabilities: Mapping[str, Any] | None = None,
        client_info: Mapping[str, Any] | None = None,
        max_rounds: int = 10,
        issue: Callable[[str, Sequence[str]], str] | None = None,
        page: Page | None = None,
    ) -> None:
        self.transport = transport
        self.issue = issue
        self.page = page
        self.path = path
        self.protocol = protocol
        self.capabilities = dict(DEFAULT_CAPABILITIES if capabilities is None else capabilities)
        self.client_info = dict(CLIENT_INFO if client_info is None else client_info)
        self.max_rounds = max_rounds
        self.questions: list[Elicitation] = []
        self.tools = Tools(self)
        self.raw = Raw(self)
        self._answers: Answerer | None = None
        self._url_answers: Answerer | None = None
        self._ids = itertools.count(1)
        #: A task's polling pace (None: its pollIntervalMs); where its status messages go.
        self.task_poll_s: float | None = None
        self.say: Callable[[str], None] | None = None

    def on_elicitation(self, answers: Answers | None) -> None:
        """Answer questions this way from now on (None: questions fail the test again).

        Args:
            answers: A function of the :class:`Elicitation` returning ``{"action", "content"}``;
                a list of answers given in order; a mapping from question key to answer; or one
                answer (a mapping with an ``action``) for every question.
        """
        self._answers = None if answers is None else Answerer(answers)

    def on_url(self, answers: Answers | None) -> None:
        """Answer URL asks (``mode: url``, a host page) this way from now on.

        An accepted answer's ``content`` is what the page receives: the test kit submits it on
        the page, as the caller would in a browser, and the server hears only the accept (the
        consent). Questions in form mode keep the :meth:`on_elicitation` answers; without
        these, URL asks take them too.

        Args:
            answers: As :meth:`on_elicitation` takes them; None: back to those.
        """
        self._url_answers = None if answers is None else Answerer(answers)

    def client(
        self,
        *,
        protocol: str | None = None,
        capabilities: Mapping[str, Any] | None = None,
        client_info: Mapping[str, Any] | None = None,
        principal: str | None = None,
        scopes: Sequence[str] = (),
        token: str | None = None,
        tasks: bool | None = None,
    ) -> Self:
        """Another client of the same server, with its own revision, capabilities and answers.

        Args:
            principal: Call as this principal, holding ``scopes`` (a test kit client only: it
                mints the token).
            scopes: The scopes ``principal`` holds.
            token: Call with this bearer token instead (``""``: with none at all).
            tasks: Declare the tasks extension (True) or not (False): a call that waits on
                someone else then gets a task, which ``tools.call`` polls to its end.

        Raises:
            ValueError: ``principal`` on a client that cannot mint tokens.
        """
        transport = self.transport
        if principal is not None:
            if self.issue is None:
                raise ValueError("only the test kit's client can call as a given principal")
            transport = transport.with_token(self.issue(principal, scopes))
        elif token is not None:
            transport = transport.with_token(token or None)
        declared = self.capabilities if capabilities is None else capabilities
        if tasks is not None:
            declared = with_tasks(declared, tasks)
        sibling = self._sibling(
            transport,
            protocol=self.protocol if protocol is None else protocol,
            capabilities=declared,
            client_info=self.client_info if client_info is None else client_info,
        )
        sibling.task_poll_s, sibling.say = self.task_poll_s, self.say
        return sibling

    def _sibling(self, transport: Transport, **options: Any) -> Self:
        """A new client of the same server, of this client's class (see :meth:`client`)."""
        return type(self)(
            transport,
            path=self.path,
            max_rounds=self.max_rounds,
            issue=self.issue,
            page=self.page,
            **options,
        )

    @property
    def http(self) -> Any:
        """The transport's HTTP client (``falcon.testing.TestClient`` in-process), if it has one."""
        return getattr(self.transport, "http", None)

    def discover(self) -> dict[str, Any]:
        """The ``server/discover`` result.

        Raises:
            AssertionError: The server answered with an error.
        """
        __tracebackhide__ = True
        response = self.send("server/discover", {})
        if not isinstance(response.result, dict):
            raise AssertionError(f"server/discover failed: {response.error or response}")
        return response.result

    def meta(self) -> dict[str, Any]:
        """The ``_meta`` this client sends with every request."""
        return {
            META_VERSION: self.protocol,
            META_CAPABILITIES: self.capabilities,
            META_CLIENT_INFO: self.client_info,
        }

    def with_meta(self, message: Any) -> Any:
        """``message`` with this client's ``_meta`` keys added where it has none of its own."""
        if not isinstance(message, Mapping) or "method" not in message:
            return message
        params = message.get("params", {})
        if not isinstance(params, Mapping):
            return message
        meta = params.get("_meta", {})
        if not isinstance(meta, Mapping):
            return message
        return {**message, "params": {**params, "_meta": {**self.meta(), **meta}}}

    def send(self, method: str, params: Mapping[str, Any]) -> RawResponse:
        """Send one request with a fresh id, this client's ``_meta`` and the required headers."""
        __tracebackhide__ = True
        message = {
            "jsonrpc": "2.0",
            "id": next(self._ids),
            "method": method,
            "params": {**params, "_meta": self.meta()},
        }
        headers = request_headers(message, self.protocol)
        response = self.post(json.dumps(message).encode(), headers, message)
        body = response.body
        if isinstance(body, Mapping) and body.get("id") not in (None, message["id"]):
            raise ProtocolViolation(
                f"{method} with id {message['id']} got a response for id {body['id']!r}"
            )
        return response

    def post(self, body: bytes, headers: Mapping[str, str], request: Any = None) -> RawResponse:
        """POST to the endpoint and parse the reply."""
        reply = self.transport.send("POST", self.path, body, headers)
        return RawResponse.from_reply(reply, request)

    def call_tool(
        self, name: str, arguments: dict[str, Any], answers: Answers | None = None
    ) -> CallResult:
        """Run one ``tools/call`` exchange to the end; see :meth:`Tools.call`."""
        __tracebackhide__ = True
        answer = Answerer(answers) if answers is not None else self._answers
        asked: list[Elicitation] = []
        exchanges: list[RawResponse] = []
        params: dict[str, Any] = {"name": name, "arguments": arguments}
        page_answers = self._url_answers if answers is None else None
        for round_ in itertools.count(1):
            response = self.send("tools/call", params)
            exchanges.append(response)
            result = response.result
            if response.error is not None or not isinstance(result, Mapping):
                break
            kind = result.get("resultType")
            if kind == "task":
                followed = follow(
                    self,
                    result,
                    lambda asking: self._responses(
                        name,
                        asked,
                        questions_of(name, arguments, 0, asking, self.capabilities),
                        answer,
                        page_answers,
                    ),
                    poll_s=self.task_poll_s,
                    say=self.say,
                )
                exchanges.extend([*followed.exchanges[:-1], followed.response])
                break
            if kind != "input_required":
                if kind is None and self.protocol == MODERN:
                    raise ProtocolViolation(
                        f"{name}: a {MODERN} result must carry resultType: {shown(result)}"
                    )
                break
            requests = questions_of(name, arguments, round_, result, self.capabilities)
            if round_ >= self.max_rounds:
                raise ProtocolViolation(
                    f"{name} was still asking after {round_} rounds; the last questions:\n"
                    + "\n".join(q.describe() for q in requests)
                )
            responses = self._responses(name, asked, requests, answer, page_answers)
            params = {"name": name, "arguments": arguments, "inputResponses": responses}
            if "requestState" in result:
                params["requestState"] = result["requestState"]
        return CallResult(
            name, arguments, exchanges[-1], len(exchanges), tuple(asked), tuple(exchanges)
        )

    def _responses(
        self,
        name: str,
        asked: list[Elicitation],
        questions: list[Elicitation],
        answer: Answerer | None,
        page_answers: Answerer | None,
    ) -> dict[str, Any]:
        """The answers to a round's (or a task's) questions; URL asks take ``page_answers``
        first."""
        self.questions.extend(questions)
        asked.extend(questions)
        return {
            q.key: self._answer(name, q, (page_answers if on_page(q) else None) or answer)
            for q in questions
        }

    def _answer(self, name: str, question: Elicitation, answer: Answerer | None) -> dict[str, Any]:
        """The response to one question; a URL ask's content goes to its page, not the server."""
        __tracebackhide__ = True
        if answer is None:
            raise UnansweredQuestion(
                f"{name} asked a question and this test gives no answer for it:\n"
                f"{question.describe()}\n"
                "Answer it with mcp.on_elicitation(...), e.g. "
                'mcp.on_elicitation({"action": "accept", "content": {...}}).'
            )
        response = answer(question)
        if not on_page(question):
            return response
        content = response.pop("content", None)
        if response.get("action") == "accept" and self.page is not None and content is not None:
            self.page(question, content if isinstance(content, Mapping) else {})
        return response
