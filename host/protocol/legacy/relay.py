"""Questions to a legacy client on its call's SSE stream, the answers relayed through the store.

A legacy client that declared form elicitation gets each question as a server-to-client
``elicitation/create`` request on the ``tools/call`` response stream, and POSTs its answer as a
JSON-RPC response. That POST may reach another gunicorn worker, or another instance, than the one
holding the stream, so every answer goes through the store: the worker that receives it checks that
the request id is one the session is waiting on, spends it (an id is answered once), and pushes the
answer onto a queue named by the id; the worker holding the stream pops it.

Request ids are random (144 bits), so nobody can answer a question they were not asked, and each is
recorded with its session, so a session can answer only its own. A question unanswered after the
answer timeout ends the call with a result saying so; nothing is done. Each open question holds
its request's thread, so a session may hold at most ``questions_per_session`` of them in one
process (``HOST_LIMIT_QUESTIONS_PER_SESSION``); one more call that would ask gets HTTP 429.

A question's record also names the tool and the digest of its definition: an answer that arrives
after a reload changed the tool (on a new worker) ends the call with a result that says so, and
nothing is done. An answer's redacted fields (``audit: {redact: [...]}``) cross the store
encrypted (:mod:`host.protocol.redaction`). ``notifications/cancelled`` for the call, on any
worker, withdraws its open question: the worker holding the stream ends the call (its audit
outcome ``cancelled``) without a response, as MCP asks, and an answer that arrives afterwards is
accepted and ignored. An act already running is not interrupted; its audit record says the
cancel came too late.

The questions of one round go out one after another; when every one is answered, the machine
advances with all the answers, as a modern retry would, and may ask again. When the call's
request carries a ``progressToken``, or the session set a log level, the later rounds run beside
the stream, which carries their handlers' progress reports and log messages as they come
(:mod:`host.protocol.streams`).
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Callable, Generator, Mapping
from dataclasses import dataclass, replace
from typing import Any

from host import ids
from host.errors import ProtocolError, StoreError
from host.limits import Slots, limit_error
from host.machine import Outcome, Question
from host.protocol import adapt
from host.protocol.calls import Pending, next_round
from host.protocol.core import ToolHost
from host.protocol.digests import digest
from host.protocol.endings import changed
from host.protocol.jsonrpc import (
    INVALID_REQUEST,
    URL_ELICITATION_REQUIRED,
    Response,
    error,
    failure,
    internal_error,
    success,
)
from host.protocol.legacy.sessions import LegacyOptions, Session
from host.protocol.redaction import FieldCipher
from host.protocol.streams import Event, EventStream, Notifier, beside
from host.protocol.url_asks import ask_of
from host.store import Store

__all__ = ["Relay"]

log = logging.getLogger("host.protocol.relay")

_QUESTION = "elicit:"
_ANSWERED = "elicit-answered:"
_QUEUE = "answer:"
_OPEN = "elicit-open:"
_CANCELLED = "elicit-cancelled:"
_WITHDRAWN = "elicit-withdrawn:"


class _Cancelled:
    """How a round's questions end when the client cancelled the call."""


@dataclass(frozen=True)
class _Stream:
    """One call whose questions go out on its stream."""

    session: Session
    request_id: str | int
    notifier: Notifier | None = None

    @property
    def call(self) -> str:
        """The call's name in the store: its session and request id, digested."""
        return digest(["call", self.session.id, self.request_id])


class Relay:
    """Asks questions on call streams and takes the answers, for every worker sharing the store.

    Args:
        host: The tool-call core.
        store: The shared store (answers cross workers through it).
        options: The answer timeout and keep-alive interval.
        cipher: Encrypts the answer's redacted fields on their way through the store.
    """

    def __init__(
        self, host: ToolHost, store: Store, options: LegacyOptions, cipher: FieldCipher
    ) -> None:
        self.host = host
        self.store = store
        self.options = options
        self.cipher = cipher
        # NOTE: a question's records outlive its wait a little, so a late answer is told
        # "unknown" rather than finding a half-deleted question.
        self._ttl_s = options.answer_timeout_s + 60
        self._open = Slots(options.questions_per_session)

    def stream(
        self,
        session: Session,
        request_id: str | int,
        pending: Pending,
        notifier: Notifier | None = None,
    ) -> EventStream:
        """The events of a call whose first round asked questions (``pending``).

        Args:
            notifier: The request's notifications, when its client asked for progress or log
                messages: later rounds then run beside the stream, which carries them as they
                come.

        Raises:
            ProtocolError: HTTP 429 when the session holds ``questions_per_session`` open
                questions in this process already (each holds its request's thread).
        """
        if not self._open.take(session.id):
            log.info(
                "question refused: too many open",
                extra={"event": "limit_refused", "session": session.tag,
                       "reason": "questions_per_session"},
            )  # fmt: skip
            raise limit_error(
                "questions_per_session",
                self._open.most,
                "HOST_LIMIT_QUESTIONS_PER_SESSION",
                "this session",
            )
        events = self._events(_Stream(session, request_id, notifier), pending)
        return EventStream(_holding(events, lambda: self._open.give(session.id)))

    def deliver(self, session: Session, response: Response) -> None:
        """Hand a client's answer to whichever worker waits for it.

        Raises:
            ProtocolError: -32600 (HTTP 400) when the id names no question this session is
                waiting on (unknown, expired, another session's), or it was answered already.
        """
        qid = response.id if isinstance(response.id, str) else ""
        if qid and self.store.get(_WITHDRAWN + qid) == session.id:
            log.info(
                "answer after a cancel ignored",
                extra={"event": "answer_ignored", "session": session.tag, "question": _tag(qid)},
            )
            return
        record = _record(self.store.get(_QUESTION + qid) if qid else None)
        if record is None or record.get("s") != session.id:
            raise error(
                INVALID_REQUEST,
                "Unknown response: no question with this id is waiting in this session "
                "(it may have timed out)",
            )
        if not self.store.add(_ANSWERED + qid, "1", self._ttl_s):
            raise error(INVALID_REQUEST, "This question was already answered")
        reply: dict[str, Any]
        machine = self.host.machines.get(str(record.get("t")))
        if machine is None or machine.definition != record.get("v"):
            reply = {"changed": True}  # NOTE: a reload changed the tool since it asked
        elif response.result is not None:
            reply = {"result": _hidden(self.cipher, response.result, machine.audit_redact)}
        else:
            reply = {"error": response.error}
        self.store.push(_QUEUE + qid, json.dumps(reply), self._ttl_s)
        log.info(
            "answer relayed",
            extra={"event": "answer_relayed", "session": session.tag, "question": _tag(qid)},
        )

    def cancel(self, session: Session, request_id: Any) -> None:
        """``notifications/cancelled`` for the call ``request_id``: withdraw its open question.

        Any worker may get it: the cancel is kept in the store, where the worker holding the
        call's stream finds it, and the open question is woken with it.
        """
        if not isinstance(request_id, str | int) or isinstance(request_id, bool):
            return
        call = _Stream(session, request_id).call
        self.store.put(_CANCELLED + call, "1", self._ttl_s)
        qid = self.store.get(_OPEN + call)
        if qid is not None:
            self.store.put(_WITHDRAWN + qid, session.id, self._ttl_s)
            self.store.push(_QUEUE + qid, json.dumps({"cancelled": True}), self._ttl_s)
        log.info(
            "call cancelled",
            extra={"event": "call_cancelled", "session": session.tag, "open": qid is not None},
        )

    def _cancelled(self, stream: _Stream) -> bool:
        return self.store.get(_CANCELLED + stream.call) is not None

    def _events(self, stream: _Stream, pending: Pending) -> Generator[Event, None, None]:
        sent: list[str] = []
        try:
            while True:
                answered = yield from self._ask(stream, pending, sent)
                if isinstance(answered, _Cancelled):
                    # NOTE: MCP: no response to a cancelled request; the stream just ends.
                    self.host.withdrawn(pending.call, pending.asked.ledger)
                    return
                if isinstance(answered, Outcome):
                    ended = adapt.result(answered, stream.session.revision)
                    yield success(stream.request_id, ended)
                    return
                advanced = yield from self._advance(stream, pending, answered)
                if not isinstance(advanced, Pending):
                    yield success(stream.request_id, advanced)
                    return
                pending = advanced
        except ProtocolError as exc:
            yield failure(stream.request_id, exc)
        except Exception:
            yield failure(stream.request_id, internal_error("tools/call"))
        finally:
            self._forget(sent)

    def _ask(
        self, stream: _Stream, pending: Pending, sent: list[str]
    ) -> Generator[Event, None, dict[str, Any] | Outcome | _Cancelled]:
        """Ask a round's questions one after another: their answers, or how the call ended."""
        responses: dict[str, Any] = {}
        session, machine = stream.session, pending.call.machine
        tool = machine.name
        for question in pending.asked.questions:
            qid = ids.token(18)
            sent.append(qid)
            record = {"s": session.id, "t": tool, "v": machine.definition}
            self.store.put(_QUESTION + qid, json.dumps(record), self._ttl_s)
            self.store.put(_OPEN + stream.call, qid, self._ttl_s)
            # NOTE: after the open record is written: a cancel either sees it or is seen here.
            if self._cancelled(stream):
                return _Cancelled()
            log.info(
                "question sent",
                extra={
                    "event": "question_sent",
                    "session": session.tag,
                    "tool": tool,
                    "key": question.key,
                    "question": _tag(qid),
                },
            )
            yield {
                "jsonrpc": "2.0",
                "id": qid,
                "method": "elicitation/create",
                "params": adapt.elicitation(question, session.revision),
            }
            reply = yield from self._wait(qid)
            if reply is None:
                return _timed_out(tool, question, self.options)
            if reply.get("cancelled"):
                return _Cancelled()
            if reply.get("changed"):
                return changed(machine, pending.call.request)
            if "result" not in reply:
                return _client_failed(tool, reply.get("error"))
            answer = _answer(_shown(self.cipher, reply["result"]), question)
            if question.on_page and answer.get("action") == "accept":
                yield from self._page(stream, pending, question)
            responses[question.key] = answer
        return responses

    def _page(
        self, stream: _Stream, pending: Pending, question: Question
    ) -> Generator[Event, None, None]:
        """After a URL ask's accept (consent only): wait for its page to be submitted.

        Submitted: ``notifications/elicitation/complete`` on the call's stream, and the call
        goes on. Not within the step's ``wait``: -32042 with the same elicitation, as
        2025-11-25 asks, so the client can retry the call once the page is done (the retry
        finds the same page, and goes on at once when it was submitted).
        """
        asks = self.host.url_asks
        wait_s = pending.call.machine.page_wait(question.key)
        deadline = time.monotonic() + wait_s
        ask_id = ask_of(question.url)
        while asks is not None:
            left = deadline - time.monotonic()
            found = self.store.wait_ask(ask_id, max(0.0, min(left, self.options.keepalive_s)))
            if found is not None and found.submitted:
                yield {
                    "jsonrpc": "2.0",
                    "method": "notifications/elicitation/complete",
                    "params": {"elicitationId": question.handle},
                }
                return
            if found is None or deadline - time.monotonic() <= 0:
                break
            yield None
        raise error(
            URL_ELICITATION_REQUIRED,
            "This request needs the page it links to completed first; complete it, then call "
            "the tool again",
            {"elicitations": [adapt.elicitation(question, stream.session.revision)]},
        )

    def _advance(
        self, stream: _Stream, pending: Pending, responses: Mapping[str, Any]
    ) -> Generator[Event, None, dict[str, Any] | Pending]:
        """The next round; with notifications, run beside the stream, which sends them live.

        NOTE: the call already reports to the stream's notifier: the first round was made
        with it.
        """
        call = replace(
            pending.call,
            ledger=pending.asked.ledger,
            responses=responses,
            cancelled=lambda: self._cancelled(stream),
        )
        revision = stream.session.revision
        advanced: dict[str, Any] | Pending = yield from beside(
            stream.notifier,
            lambda _: next_round(self.host, call, revision),
            self.options.keepalive_s,
        )
        return advanced

    def _wait(self, qid: str) -> Generator[Event, None, dict[str, Any] | None]:
        """Wait for the answer to ``qid``, pausing for keep-alives; None when time ran out."""
        deadline = time.monotonic() + self.options.answer_timeout_s
        while (remaining := deadline - time.monotonic()) > 0:
            raw = self.store.pop(_QUEUE + qid, min(self.options.keepalive_s, remaining))
            if raw is not None:
                reply: dict[str, Any] = json.loads(raw)
                return reply
            if deadline - time.monotonic() > 0:
                yield None
        return None

    def _forget(self, sent: list[str]) -> None:
        """Drop the call's questions, so late answers to them are refused."""
        for qid in sent:
            try:
                self.store.delete(_QUESTION + qid)
            except StoreError:  # pragma: no cover - the records expire anyway
                log.warning("could not forget a question", extra={"question": _tag(qid)})


def _holding(events: Generator[Event, None, None], give: Callable[[], None]) -> Generator[Event]:
    """``events``, a slot held until they end or are closed (``give`` gives it back)."""
    try:
        yield from events
    finally:
        give()


def _record(raw: str | None) -> dict[str, Any] | None:
    """A question's record (its session, tool and definition), or None."""
    try:
        record = json.loads(raw) if raw is not None else None
    except ValueError:
        return None
    return record if isinstance(record, dict) else None


def _hidden(cipher: FieldCipher, result: Any, hidden: frozenset[str]) -> Any:
    """A client's ``ElicitResult`` with its redacted fields encrypted, for the store."""
    content = result.get("content") if isinstance(result, Mapping) else None
    if not hidden or not isinstance(content, Mapping):
        return result
    return {**result, "content": cipher.hide(content, hidden)}


def _shown(cipher: FieldCipher, result: Any) -> Any:
    """The inverse of :func:`_hidden`, on the worker holding the stream."""
    content = result.get("content") if isinstance(result, Mapping) else None
    if not isinstance(content, Mapping):
        return result
    return {**result, "content": cipher.show(content)}


def _answer(result: Mapping[str, Any], question: Question) -> dict[str, Any]:
    """A client's ``ElicitResult`` as an answer, a legacy multi-select string split back."""
    answer = dict(result)
    content = result.get("content")
    if isinstance(content, Mapping):
        answer["content"] = adapt.answer(question.schema, content)
    return answer


def _timed_out(tool: str, question: Question, options: LegacyOptions) -> Outcome:
    return Outcome.error(
        f"No answer to the question {question.message!r} arrived within "
        f"{options.answer_timeout_s:g} seconds, so {tool} stopped without doing "
        "anything. Call the tool again to ask again."
    )


def _client_failed(tool: str, err: Any) -> Outcome:
    code = err.get("code") if isinstance(err, Mapping) else None
    message = err.get("message") if isinstance(err, Mapping) else None
    return Outcome.error(
        f"The client could not show the question (error {code}: {message}), so "
        f"{tool} stopped without doing anything."
    )


def _tag(qid: str) -> str:
    """A question id as log lines show it: enough to follow it, not enough to answer it."""
    return digest(["question", qid])[:10]
