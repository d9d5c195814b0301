"""What a machine returns and what it is given: the contract between machine and protocol.

The protocol layer sees tools only through these types and :class:`host.machine.run.Machine`.
Schemas here are plain JSON-ready dicts in the modern revision's form; downgrading them for older
revisions is the protocol's job (see :mod:`host.protocol.adapt`).
"""

from __future__ import annotations

import binascii
import hashlib
import json
import logging
import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, Protocol

from host.frozen import quick_init
from host.jsonvalues import Encoded, encoder, foreign, storable
from host.machine.gate import NO_GATE, Decided, Gate
from host.machine.local_locks import PROCESS_LOCKS
from host.machine.pages import NO_URL_ASKS, UrlAsks

__all__ = [
    "NO_APPROVALS",
    "Answer",
    "Answers",
    "Approvals",
    "Approved",
    "CallContext",
    "Ending",
    "HeldLock",
    "Locks",
    "NeedInput",
    "Once",
    "Outcome",
    "ProgressSink",
    "Question",
    "act_directly",
    "given",
]

Answer = Mapping[str, Any]
"""One answer as the client sent it: ``{"action": ..., "content": {...}}``."""

Ending = Literal["declined", "cancelled", "unticked", "rejected", "expired", "busy"]
"""How a call ends without its act: a question declined, dismissed or unticked by the user, an
approval request rejected by an approver or left undecided until it expired, or (``busy``) the
act's lock held by another call for all of ``lock_wait``."""

#: Question digests' text (sorted keys: one text per question, whatever its schema's order).
_SORTED = encoder(sort_keys=True)
#: The act record's text, as the store has always kept it.
_ASCII = encoder(ensure_ascii=True)
#: Base64's two letters that URLs reserve, as the URL-safe alphabet writes them.
_URL_SAFE = bytes.maketrans(b"+/", b"-_")


@quick_init
@dataclass(frozen=True)
class Question:
    """One question to ask now.

    Attributes:
        key: The ``inputRequests`` key: the name of the step that asks it.
        message: The rendered message.
        schema: The rendered ``requestedSchema`` (modern form); empty for a URL ask.
        url: A URL ask's page (``mode: url``); "" for a form.
        handle: A URL ask's ``elicitationId``, for the legacy revision that has one.
    """

    key: str
    message: str
    schema: dict[str, Any]
    url: str = ""
    handle: str = ""

    @property
    def on_page(self) -> bool:
        """Whether this is a URL ask: asked on a host page, not in the client's form."""
        return bool(self.url)

    def params(self) -> dict[str, Any]:
        """The ``elicitation/create`` params for this question."""
        if self.url:
            return {"mode": "url", "message": self.message, "url": self.url}
        return {"mode": "form", "message": self.message, "requestedSchema": self.schema}

    def digest(self) -> str:
        """A short digest of what was asked: an answer applies only to the question it answers."""
        asked: list[Any] = [self.key, self.message, self.schema]
        if self.url:
            asked.append(self.url)
        text = _SORTED(asked)
        raw = hashlib.sha256(text.encode("utf-8")).digest()[:12]
        # NOTE: base64.urlsafe_b64encode written out (twelve bytes: no padding), two Python
        # frames less for each question each round.
        return binascii.b2a_base64(raw, newline=False).translate(_URL_SAFE).decode("ascii")


class Answers(Protocol):
    """Where the machine finds the user's answers: only answers to the question as it reads now.

    The protocol layer's ledger (:mod:`host.protocol.answers`) is the one implementation that
    serves calls: it returns an answer only for a question this call asked, with this digest.
    """

    def answer_for(self, question: Question) -> Answer | None:
        """The answer to ``question`` exactly as it is asked now, or None to ask it."""
        ...


@dataclass(frozen=True)
class _Given:
    answers: Mapping[str, Answer]

    def answer_for(self, question: Question) -> Answer | None:
        return self.answers.get(question.key)


def given(answers: Mapping[str, Answer]) -> Answers:
    """Answers by question key, trusted whatever the question says: for tests and dry runs."""
    return _Given(answers)


@quick_init
@dataclass(frozen=True)
class Approved:
    """A confirm the call went past: ticked by the user in this call, or remembered.

    Attributes:
        question: The confirm step's name.
        remembered: True when an earlier yes spared the user the question.
        key: The approval's key, for a confirm that remembers (``remember:``); else None.
    """

    question: str
    remembered: bool
    key: str | None = None


class Approvals(Protocol):
    """Where confirms with ``remember:`` find and keep a yes, bound to the caller and the tool.

    The protocol layer binds one to the caller and the tool of each round (and keeps the yes
    in the shared store); without one, nothing is remembered (:data:`NO_APPROVALS`).
    """

    def remembered(self, question: str, key: str) -> bool:
        """Whether a yes to ``question`` about ``key`` is remembered now."""
        ...

    def remember(self, question: str, key: str, for_s: float) -> None:
        """Keep a yes to ``question`` about ``key`` for ``for_s`` seconds from now."""
        ...


class _NoApprovals:
    """Remembers nothing: every confirm is asked."""

    def remembered(self, question: str, key: str) -> bool:
        return False

    def remember(self, question: str, key: str, for_s: float) -> None:
        return None


NO_APPROVALS: Approvals = _NoApprovals()
"""The approvals of a call that remembers nothing (dry runs, tests of the machine alone)."""


class HeldLock(Protocol):
    """A lock this call holds until it releases it (the store's :class:`host.store.Lock`)."""

    def release(self) -> bool:
        """Free it for the next caller; whether it was still held (False: its lease lapsed)."""
        ...


class Locks(Protocol):
    """Where a locked act takes its lock: the store's, shared by every worker, when serving."""

    def acquire(self, name: str, wait_s: float) -> HeldLock | None:
        """Hold the lock ``name``, waiting up to ``wait_s``; None if another call kept it."""
        ...


@quick_init
@dataclass(frozen=True)
class NeedInput:
    """The machine stopped at questions that need the user's answers before it can go on."""

    questions: tuple[Question, ...]


@quick_init
@dataclass(frozen=True)
class Outcome:
    """A finished call: the MCP ``CallToolResult`` body, without protocol envelope.

    Attributes:
        content: MCP content blocks.
        structured: ``structuredContent`` when the result was a mapping (or list), else None.
        is_error: True for tool errors (bad arguments, ``ToolError``, internal failures).
        acted: True when this is the act's result (run now, or recorded and replayed).
        replayed: True when the act ran in an earlier request and this is its record.
        incident: The incident id of an internal failure, also in the log.
        ending: How the user ended the call without the act, when they did.
        approvals: The confirms the call went past, asked or remembered (for the audit
            trail; a replayed record has none).
        approval: The approval request the call went through or waits for, if any.
        meta: ``_meta`` of the result, for programs (the pending approval's ``host/approval``).
    """

    content: list[dict[str, Any]]
    structured: Any = None
    is_error: bool = False
    acted: bool = False
    incident: str | None = None
    replayed: bool = False
    ending: Ending | None = None
    approvals: tuple[Approved, ...] = ()
    approval: Decided | None = None
    meta: Mapping[str, Any] | None = None

    @classmethod
    def from_value(cls, value: Any, *, acted: bool = False) -> Outcome:
        """Wrap a handler's or template's value: mappings and lists become structured content."""
        if value is None:
            return cls(content=[], acted=acted)
        if isinstance(value, str):
            return cls(content=[{"type": "text", "text": _utf8(value)}], acted=acted)
        text, plain = _as_json(value)
        # NOTE: the structured content is the text's JSON: the reply writes that text, not a
        # second encoding of the value (most of a large result's time went to encoding).
        structured = (
            Encoded(plain, text)
            if isinstance(plain, dict)
            else Encoded({"result": plain}, '{"result": ' + text + "}")
        )
        return cls(content=[{"type": "text", "text": text}], structured=structured, acted=acted)

    def went_past(self, approvals: tuple[Approved, ...], approval: Decided | None) -> Outcome:
        """This outcome with the confirms and the approval request its call went past.

        NOTE: made with the constructor, not :func:`dataclasses.replace` (which reads every
        field's definition again on each call): every call that confirmed ends here.
        """
        return Outcome(
            self.content,
            self.structured,
            self.is_error,
            self.acted,
            self.incident,
            self.replayed,
            self.ending,
            approvals,
            approval,
            self.meta,
        )

    @classmethod
    def error(cls, text: str, *, incident: str | None = None) -> Outcome:
        """A tool error result the model can read and act on."""
        return cls(content=[{"type": "text", "text": text}], is_error=True, incident=incident)

    def to_result(self) -> dict[str, Any]:
        """The ``CallToolResult`` members (modern; :mod:`host.protocol.adapt` for others)."""
        result: dict[str, Any] = {"content": self.content}
        if self.structured is not None:
            result["structuredContent"] = self.structured
        if self.is_error:
            result["isError"] = True
        if self.meta:
            result["_meta"] = dict(self.meta)
        return result

    def to_json(self) -> str:
        """Serialize for the at-most-once store."""
        structured = self.structured
        if not isinstance(structured, Encoded):
            return _ASCII(
                {"c": self.content, "s": structured, "e": self.is_error, "i": self.incident}
            )
        # NOTE: the structured result's JSON was made once already (its text block): kept as is.
        rest = _ASCII({"c": self.content, "e": self.is_error, "i": self.incident})
        return rest[:-1] + ', "s": ' + structured.text + "}"

    @classmethod
    def from_json(cls, text: str) -> Outcome:
        """The inverse of :meth:`to_json`: the act's recorded result, replayed."""
        data = json.loads(text)
        return cls(data["c"], data["s"], data["e"], True, data["i"], replayed=True)


ProgressSink = Callable[[float, "float | None", "str | None"], None]
"""Sends one progress report (progress, total, message) to the client that asked for them."""

Once = Callable[[Callable[[], Outcome]], Outcome]
"""Runs the act at most once for this call, across workers, returning the recorded outcome."""


def act_directly(act: Callable[[], Outcome]) -> Outcome:
    """The guard of an act that no retry can repeat (a first round's): it just runs it."""
    return act()


@quick_init
@dataclass(frozen=True)
class CallContext:
    """What a handler's ``ctx`` parameter receives, and what the host needs to run one call.

    Built whole by the protocol layer for each round; frozen, so a handler cannot change what
    the host relies on (its guard, its principal).

    Attributes:
        principal: Who is calling (the authenticated identity, or ``anonymous``).
        scopes: The scopes the caller's credentials hold (empty without authentication).
        claims: The caller's verified token claims (empty without a token).
        tool: The tool's name.
        data_dir: The host's data directory, for handlers that keep files.
        log: A logger for the handler.
        round: Which round of the exchange this is, from 1.
        once: The at-most-once guard around the act (the store's, when serving).
        report: Where :meth:`progress` sends reports: set by the protocol when the client asked
            for progress and can receive it; None makes :meth:`progress` a no-op.
        approvals: Where confirms with ``remember:`` find and keep a yes (the store's, bound to
            this principal and tool, when serving).
        gate: Where ``approve`` steps find or make their approval requests (the store's, bound
            to this caller, tool and definition, when serving).
        locks: Where a locked act takes its lock (the store's, when serving; else this
            process's own).
        url_asks: Where ``ask`` steps with ``mode: url`` find their pages and the values
            submitted there (the store's, bound to this caller, tool and call, when serving).
    """

    principal: str = "anonymous"
    scopes: frozenset[str] = frozenset()
    claims: Mapping[str, Any] = field(default_factory=dict)
    tool: str = ""
    data_dir: Path = field(default_factory=lambda: Path(".host"))
    log: logging.Logger = field(default_factory=lambda: logging.getLogger("host.handler"))
    round: int = 1
    once: Once = act_directly
    report: ProgressSink | None = None
    approvals: Approvals = NO_APPROVALS
    gate: Gate = NO_GATE
    locks: Locks = PROCESS_LOCKS
    url_asks: UrlAsks = NO_URL_ASKS

    def progress(
        self, progress: float, total: float | None = None, message: str | None = None
    ) -> None:
        """Tell the client how far the call has got: a ``notifications/progress``.

        Sent, at once, only when the client asked for progress (a ``progressToken``) and can
        receive it (an event stream, or stdio); otherwise nothing happens, so a handler may
        call it whoever calls the tool. ``progress`` must increase from one report to the
        next (MCP's rule): a report that does not is dropped, with a warning in the log.

        Args:
            progress: How far, in any unit (items done, percent, ...).
            total: The value ``progress`` will reach, if known.
            message: A short text for the user about what is happening now.

        Raises:
            TypeError: ``progress`` or ``total`` is not a number, or ``message`` not a text.
            ValueError: ``progress`` or ``total`` is infinite or NaN.
        """
        _number("progress", progress)
        if total is not None:
            _number("total", total)
        if message is not None and not isinstance(message, str):
            raise TypeError(f"ctx.progress: message must be a str, not {type(message).__name__}")
        if self.report is not None:
            self.report(progress, total, message)


def _number(name: str, value: Any) -> None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise TypeError(f"ctx.progress: {name} must be a number, not {type(value).__name__}")
    if not math.isfinite(value):
        raise ValueError(f"ctx.progress: {name} must be a finite number, not {value!r}")


def _as_json(value: Any) -> tuple[str, Any]:
    """``value``'s JSON text, and the value that text decodes to (``value`` itself if plain).

    NOTE: a value JSON has no type for (a datetime, a Decimal) is written as its ``str()``, and
    NaN or an infinity by name (as the audit keeps them); the structured content must be the same
    JSON as the text, or the reply, the act's record and the stream could not be encoded (the
    client got an HTTP 500 once the act had run).

    Raises:
        ValueError: ``value`` contains itself (the caller reports the result unusable).
    """
    try:
        text, converted = foreign(value, allow_nan=False)
    except ValueError as exc:
        if "float" not in str(exc):
            raise
        value = storable(value)
        text, converted = foreign(value, allow_nan=True)
        converted = True
    if _utf8(text) is not text:
        value = storable(value)
        text, _ = foreign(value, allow_nan=True)
        converted = True
    return text, (json.loads(text) if converted else value)


def _utf8(text: str) -> str:
    """``text``, or a copy with each lone surrogate (which no UTF-8 holds) as U+FFFD.

    NOTE: the reply is UTF-8: a handler's text decoded with ``surrogateescape`` made it fail.
    An ASCII text is known to hold none without a look; any other is encoded once to find out.
    """
    if text.isascii():
        return text
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        replaced: str = storable(text)
        return replaced
    return text
