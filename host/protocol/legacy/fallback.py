"""``sendElicitationResult``: questions for legacy clients that cannot show forms.

A legacy session whose client did not declare form elicitation (or whose revision,
predates it) still gets its tools' questions: the call returns a normal result that tells the model
what to ask the user, field by field, and how to send the answer back through the
``sendElicitationResult`` tool, listed for those sessions only. That tool checks the answer against
the form, resumes the original call with its original arguments, and returns its result, which may
be the next question.

Each question gets a random elicitation id (144 bits), recorded in the store with the call (tool,
arguments, its ledger: :mod:`host.protocol.answers`, redacted fields encrypted:
:mod:`host.protocol.redaction`) and bound as a ``requestState`` is: to the caller, the tool, the
arguments and the tool's definition (the ledger's digest, which the core checks), not to the
session. Clients that open a new MCP session (or start a new server process) for each call can so
finish it; another caller cannot. Without auth every caller is ``anonymous``, and the id itself is
what binds the question. It expires with the ``requestState`` TTL and is spent on first use (a
single-use claim), except when the answer does not fit the form: then nothing ran, and the model
may correct the answer and send it again. Each refusal says its true reason and what the model
should do next, never advice that would loop.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable, Mapping
from dataclasses import replace
from typing import Any

from host import ids
from host.errors import ProtocolError
from host.machine import Outcome
from host.protocol import adapt
from host.protocol.answers import Ledger
from host.protocol.calls import Pending, next_round
from host.protocol.context import RequestContext
from host.protocol.core import ToolHost
from host.protocol.digests import digest, principal_digest
from host.protocol.jsonrpc import INVALID_PARAMS
from host.protocol.legacy.describe import describe_question, lifetime
from host.protocol.legacy.sessions import Session
from host.protocol.redaction import FieldCipher
from host.protocol.steps import Asked, Call
from host.protocol.streams import Notifier
from host.spec.model import FALLBACK_TOOL
from host.store import Store

__all__ = ["FALLBACK_TOOL", "Fallback", "fallback_tool"]

log = logging.getLogger("host.protocol.fallback")


_RECORD = "fallback:"
_USED = "fallback-used:"
_ACTIONS = ("accept", "decline", "cancel")


def fallback_tool() -> dict[str, Any]:
    """The MCP ``Tool`` object of ``sendElicitationResult``."""
    return {
        "name": FALLBACK_TOOL,
        "title": "Send the user's answer",
        "description": (
            "Send the user's answer to a question another tool asked. Use it only when a tool "
            "result says it needs the user's answer and gives an elicitationId: ask the user that "
            "question in the chat, wait for their reply, then call this tool with it. It resumes "
            "the original call and returns that call's result, which may be another question."
        ),
        "inputSchema": {
            "type": "object",
            "properties": {
                "elicitationId": {
                    "type": "string",
                    "description": "The elicitationId from the result that asked the question",
                },
                "action": {
                    "type": "string",
                    "enum": list(_ACTIONS),
                    "description": (
                        "accept: the user answered; decline: the user said no; cancel: the user "
                        "would rather not answer"
                    ),
                },
                "content": {
                    "type": "object",
                    "description": "The user's answers by field name (with accept only)",
                },
            },
            "required": ["elicitationId", "action"],
        },
    }


class Fallback:
    """Asks questions through tool results, and resumes calls from ``sendElicitationResult``.

    Args:
        host: The tool-call core (answer checks, the at-most-once act).
        store: Where elicitation ids and their calls are kept.
        ttl_s: How long an elicitation id stays valid.
        cipher: Encrypts the redacted fields of the arguments and answers the record keeps.
    """

    def __init__(self, host: ToolHost, store: Store, ttl_s: float, cipher: FieldCipher) -> None:
        self.host = host
        self.store = store
        self.ttl_s = ttl_s
        self.cipher = cipher

    def ask(self, session: Session, call: Call, step: Asked) -> Outcome:
        """The result that asks the model to put ``step``'s first question to the user.

        NOTE: one question per result: the machine asks the others of the round again once
        this one is answered, and each answer is checked as soon as it arrives.
        """
        question, machine = step.questions[0], call.machine
        eid = ids.token(18)
        hidden = machine.audit_redact
        record = {
            "p": principal_digest(call.request.owner),
            "t": machine.name,
            "a": self.cipher.hide(call.arguments, hidden),
            "q": {"key": question.key, "schema": question.schema},
            "l": _ledger(step.ledger.to_payload(), lambda c: self.cipher.hide(c, hidden)),
        }
        self.store.put(_RECORD + eid, json.dumps(record), self.ttl_s)
        log.info(
            "question in a result",
            extra={
                "event": "fallback_question",
                "session": session.tag,
                "tool": machine.name,
                "key": question.key,
                "elicitation": _tag(eid),
            },
        )
        text = describe_question(machine.name, question, eid, self.ttl_s)
        request = {
            "elicitationId": eid,
            "message": question.message,
            "requestedSchema": question.schema,
        }
        # NOTE: no structuredContent (it would have to fit the tool's outputSchema); a tool that
        # declares one gets isError so clients do not check this result against it.
        return Outcome(
            content=[
                {"type": "text", "text": text},
                {"type": "text", "text": json.dumps(request, ensure_ascii=False)},
            ],
            is_error=machine.output_schema is not None,
        )

    def answer(
        self,
        session: Session,
        arguments: Mapping[str, Any],
        request: RequestContext,
        notifier: Notifier | None = None,
        trace: Mapping[str, str] | None = None,
    ) -> dict[str, Any]:
        """Run ``sendElicitationResult``: resume the call its id names with the answer.

        ``notifier`` takes the resumed call's progress reports (``sendElicitationResult``'s own
        request carries the ``progressToken``) and its log messages, when the session set a
        level. ``trace`` is this request's trace context, for the core's observers.

        Returns:
            The ``CallToolResult`` in the session's revision.

        Raises:
            ProtocolError: As :meth:`ToolHost.advance` does, except for an answer that does not
                fit the form, which is a result the model can correct.
        """
        eid, action, content = (arguments.get(k) for k in ("elicitationId", "action", "content"))
        problem = _bad_arguments(eid, action, content)
        if problem is None:
            assert isinstance(eid, str)
            found = self._call(session, eid, request, (action, content), notifier, trace or {})
            if isinstance(found, Call):
                return self._resume(session, found, eid)
            problem = found
        return adapt.result(problem, session.revision)

    def _call(
        self,
        session: Session,
        eid: str,
        request: RequestContext,
        answered: tuple[Any, Any],
        notifier: Notifier | None,
        trace: Mapping[str, str],
    ) -> Call | Outcome:
        """The call ``eid`` names, resumed with the answer (action, content); or why not."""
        record = self._record(eid, request.owner)
        if not isinstance(record, dict):
            return record
        machine = self.host.machine(record["t"], request)
        if not self.store.add(_USED + eid, "1", self.ttl_s):
            return Outcome.error(_used(eid, machine.name))
        action, content = answered
        answer: dict[str, Any] = {"action": action}
        if content is not None:
            answer["content"] = adapt.answer(record["q"]["schema"], content)
        return Call(
            machine,
            self.cipher.show(record["a"]),
            request,
            Ledger.from_payload(_ledger(record["l"], self.cipher.show)),
            responses={record["q"]["key"]: answer},
            progress=notifier.report if notifier else None,
            logs=notifier.logs if notifier else None,
            version=session.version,
            trace=trace,
        )

    def _resume(self, session: Session, call: Call, eid: str) -> dict[str, Any]:
        """The resumed call's next round: its result, or the next question as a result."""
        revision = session.revision
        try:
            advanced = next_round(self.host, call, revision)
        except ProtocolError as exc:
            if exc.code != INVALID_PARAMS:
                raise
            # NOTE: the answer did not fit its form, so nothing ran: the id stays usable.
            self.store.delete(_USED + eid)
            return adapt.result(_mismatch(exc), revision)
        if isinstance(advanced, Pending):
            return adapt.result(
                self.ask(session, replace(call, responses={}), advanced.asked), revision
            )
        # NOTE: the record stays until it expires, so a second use is told it was used.
        return advanced

    def _record(self, eid: str, principal: str) -> dict[str, Any] | Outcome:
        """The question's record, if ``principal`` may answer it; else the refusal to return."""
        raw = self.store.get(_RECORD + eid)
        if raw is None:
            return Outcome.error(_unknown(eid, self.ttl_s))
        record: dict[str, Any] = json.loads(raw)
        if record["p"] != principal_digest(principal):
            log.warning(
                "elicitation id of another caller",
                extra={"event": "fallback_refused", "reason": "caller", "elicitation": _tag(eid)},
            )
            return Outcome.error(_foreign(eid))
        return record


def _ledger(
    payload: dict[str, Any], change: Callable[[Mapping[str, Any]], dict[str, Any]]
) -> dict[str, Any]:
    """A ledger's payload with ``change`` applied to each accepted answer's content."""
    accepted = {}
    for key, (answer_digest, answer) in payload["a"].items():
        content = answer.get("content")
        if isinstance(content, Mapping):
            answer = {**answer, "content": change(content)}
        accepted[key] = [answer_digest, answer]
    return {**payload, "a": accepted}


def _bad_arguments(eid: Any, action: Any, content: Any) -> Outcome | None:
    """The result that says what is wrong with ``sendElicitationResult``'s arguments, or None."""
    if not isinstance(eid, str) or action not in _ACTIONS:
        return Outcome.error(
            f"{FALLBACK_TOOL} needs elicitationId (the id a tool result gave) and action "
            f"(one of {', '.join(_ACTIONS)})."
        )
    if content is not None and not isinstance(content, Mapping):
        return Outcome.error(f"{FALLBACK_TOOL}: content must be an object of answers.")
    return None


def _mismatch(exc: ProtocolError) -> Outcome:
    data = exc.data if isinstance(exc.data, Mapping) else {}
    problems = [
        f"- {e.get('field') or '(content)'}: {e.get('message')}"
        for e in data.get("errors", [])
        if isinstance(e, Mapping)
    ]
    return Outcome.error(
        "\n".join(
            [
                f"{exc.message}, so nothing was done:",
                *problems,
                f"Fix the content (ask the user again if needed) and call {FALLBACK_TOOL} again "
                "with the same elicitationId.",
            ]
        )
    )


def _unknown(eid: str, ttl_s: float) -> str:
    return (
        f"No question has the elicitationId {eid!r}: either it is not the exact id a tool result "
        f"gave, or the question expired (an id is valid for {lifetime(ttl_s)} after it is given). "
        "Check that you copied the id exactly. If you did, the question expired: tell the user, "
        "and call the tool again only if they still want it done (that asks a new question). "
        "Sending this id again will not work."
    )


def _foreign(eid: str) -> str:
    return (
        f"The elicitationId {eid!r} belongs to a question asked of another user (another "
        "login or token), and only they can answer it. Nothing was done. Do not send it again: "
        "if this user wants the same thing done, call the tool yourself; it asks them its own "
        "question."
    )


def _used(eid: str, tool: str) -> str:
    return (
        f"The elicitationId {eid!r} was already used: its answer was sent, and {tool} went on "
        "with it (its result was returned then). Nothing more was done now. Do not send it "
        "again; call "
        f"{tool} again only if the user wants it done once more."
    )


def _tag(eid: str) -> str:
    return digest(["elicitation", eid])[:10]
