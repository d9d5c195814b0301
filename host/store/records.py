"""Remembered approvals and audit records: what the store keeps of them, in both backends.

An :class:`Approval` is a yes to one ``confirm`` that a caller may be spared for a while: it is
identified by its principal, tool, question and key, and its id is a digest of those four
(:func:`approval_id`), so a lookup needs no scan and every backend agrees on it. An
:class:`AuditRecord` is what one call did; it is keyed by the call's id, so the copies of a final
round that a client retries write one record between them (see :data:`ACTED`).
"""

from __future__ import annotations

import hashlib
import json
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from host import ids
from host.jsonvalues import encoder
from host.store.checks import check_filters, check_ttl
from host.times import iso, parse_iso

__all__ = [
    "ACTED",
    "ENDED",
    "STARTED",
    "Approval",
    "AuditRecord",
    "approval_id",
    "call_id",
    "iso",
    "parse_iso",
]

ACTED = 2
"""The rank of a record written by the round that ran the act: it replaces a record of lower
rank for the same call (a retry's replay that got there first), and nothing replaces it."""

ENDED = 1
"""The rank of any other call-ending round's record: the first one written stays."""

STARTED = 0
"""The rank of the record written before a claimed act runs (an act whose outcome is unknown):
any call-ending round's record replaces it, so it stays only when the act's worker died. Its time
is when its round would have ended by, and reads leave it out until then."""

#: How :meth:`AuditRecord.body` is encoded (its values were JSON when the call kept them).
_BODY = encoder(default=str)


def _number(value: float) -> float | int:
    """``value``, a whole one as an int: the same JSON number, written as RFC 8785 writes it."""
    return int(value) if value.is_integer() else value


def approval_id(principal: str, tool: str, question: str, key: str) -> str:
    """The id of the approval of ``question`` in ``tool`` for ``principal`` and ``key``."""
    text = json.dumps([principal, tool, question, key], ensure_ascii=False)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:20]


def call_id(nonce: str) -> str:
    """The public id of a call: a digest of its nonce, which is never shown itself.

    A nonce that begins with its call's start (:func:`host.ids.nonce`) gives an id that does too,
    so audit records are written in their index's order; one made before nonces carried it
    (a call in flight across an upgrade) keeps its digest alone.
    """
    return (
        ids.nonce_start(nonce) + hashlib.sha256(b"call:" + nonce.encode("utf-8")).hexdigest()[:20]
    )


@dataclass(frozen=True)
class Approval:
    """A remembered yes.

    Attributes:
        id: :func:`approval_id` of the four fields below.
        principal: Who said yes.
        tool: The tool it was asked in.
        question: The ``confirm`` step's name.
        key: What the yes was about: the rendered ``remember.key``, or the digest of the call's
            arguments.
        granted: When it was given (Unix time).
        expires: When it stops counting (Unix time).
    """

    id: str
    principal: str
    tool: str
    question: str
    key: str
    granted: float
    expires: float

    @classmethod
    def new(cls, principal: str, tool: str, question: str, key: str, ttl_s: float) -> Approval:
        """A yes given now that lasts ``ttl_s`` seconds.

        Raises:
            ValueError: ``ttl_s`` is not a positive number, or a field is not a non-empty text.
        """
        check_ttl(ttl_s)
        check_filters(principal=principal, tool=tool, question=question)
        if not isinstance(key, str):
            raise ValueError(f"key must be a string, got {key!r}")
        now = time.time()
        return cls(
            approval_id(principal, tool, question, key),
            principal,
            tool,
            question,
            key,
            now,
            now + ttl_s,
        )

    def to_json(self) -> str:
        """The approval as one JSON text (how Redis keeps it)."""
        return json.dumps(
            [self.principal, self.tool, self.question, self.key, self.granted, self.expires],
            ensure_ascii=False,
        )

    @classmethod
    def from_json(cls, approval: str, text: str) -> Approval:
        """The inverse of :meth:`to_json`, for the approval with id ``approval``."""
        principal, tool, question, key, granted, expires = json.loads(text)
        return cls(approval, principal, tool, question, key, float(granted), float(expires))

    def describe(self) -> dict[str, Any]:
        """JSON-ready fields, as ``host approvals remembered --format json`` prints them."""
        return {
            "id": self.id,
            "principal": self.principal,
            "tool": self.tool,
            "question": self.question,
            "key": self.key,
            "granted": iso(self.granted),
            "expires": iso(self.expires),
        }


@dataclass(frozen=True, init=False)
class AuditRecord:
    """One call that reached an end.

    Attributes:
        id: The call's id (:func:`call_id`): one record per call.
        time: When the call ended (Unix time).
        principal: Who called.
        tool: The tool.
        outcome: ``acted``, ``read``, ``declined``, ``cancelled``, ``unticked``, ``busy``, ``error``
            or ``incident``.
        arguments: The call's arguments, redacted fields as ``"[redacted]"``.
        answers: Each answered question's ``{action, content}``, redacted the same way.
        approvals: The confirms the call went past: ``{question, via: asked|remembered}``, with
            the ``approval`` id where the confirm remembers.
        acted: Whether the act ran (an error after the act, or an act whose outcome is unknown,
            has ``acted`` true).
        incident: The incident id of an internal failure, a lost act or one still running.
        duration_s: Seconds from the call's first round to its end.
        code: The JSON-RPC error code, when the call ended refused (questions switched off,
            a client that cannot answer).
        note: What else happened to the call, when something did (a cancel that came while
            the act ran, too late to stop it).
        kind: ``call`` (a call's record), ``started`` (an act about to run: the call's record if
            its worker dies), ``decision`` (an approver's, or a request's end) or ``checkpoint``.
        detail: A decision's ``request``, ``verdict`` and ``reason``; a checkpoint's ``key``
            and ``signature``.
        seq: Its place in the store's chain, once written (:mod:`host.store.chain`).
        prev: The chain's previous record's hash, once written.
        hash: Its own hash, once written.
    """

    id: str
    time: float
    principal: str
    tool: str
    outcome: str
    arguments: Mapping[str, Any] = field(default_factory=dict)
    answers: Mapping[str, Any] = field(default_factory=dict)
    approvals: tuple[Mapping[str, Any], ...] = ()
    acted: bool = False
    incident: str | None = None
    duration_s: float = 0.0
    code: int | None = None
    note: str | None = None
    kind: str = field(default="call", compare=False)
    detail: Mapping[str, Any] = field(default_factory=dict)
    seq: int | None = field(default=None, compare=False)
    prev: str | None = field(default=None, compare=False)
    hash: str | None = field(default=None, compare=False)

    def __init__(
        self,
        id: str,
        time: float,
        principal: str,
        tool: str,
        outcome: str,
        arguments: Mapping[str, Any] | None = None,
        answers: Mapping[str, Any] | None = None,
        approvals: tuple[Mapping[str, Any], ...] = (),
        acted: bool = False,
        incident: str | None = None,
        duration_s: float = 0.0,
        code: int | None = None,
        note: str | None = None,
        kind: str = "call",
        detail: Mapping[str, Any] | None = None,
        seq: int | None = None,
        prev: str | None = None,
        hash: str | None = None,
    ) -> None:
        # NOTE: the fields set at once, past the frozen class's __setattr__: the generated
        # __init__ sets each through object.__setattr__, 22k instructions a record (of 33k).
        self.__dict__.update(
            id=id, time=time, principal=principal, tool=tool, outcome=outcome,
            arguments={} if arguments is None else arguments,
            answers={} if answers is None else answers,
            approvals=approvals, acted=acted, incident=incident, duration_s=duration_s,
            code=code, note=note, kind=kind, detail={} if detail is None else detail,
            seq=seq, prev=prev, hash=hash,
        )  # fmt: skip

    def describe(self) -> dict[str, Any]:
        """JSON-ready fields, as ``host audit --format json`` prints them (``note`` when set).

        Times are ISO 8601 in UTC; a written record has its chain's ``seq``, ``prev``, ``hash``.
        """
        described = self.entry()
        if self.seq is not None:
            described.update(seq=self.seq, prev=self.prev, hash=self.hash)
        return described

    def entry(self) -> dict[str, Any]:
        """The fields the chain hashes, besides ``seq`` and ``prev``."""
        if self.kind in ("decision", "checkpoint"):
            return {
                "kind": self.kind,
                "id": self.id,
                "time": iso(self.time, ms=True),
                "principal": self.principal,
                "tool": self.tool,
                **self.detail,
            }
        described = {
            "kind": self.kind,
            "id": self.id,
            "time": iso(self.time, ms=True),
            "principal": self.principal,
            "tool": self.tool,
            "outcome": self.outcome,
            "arguments": dict(self.arguments),
            "answers": dict(self.answers),
            "approvals": [dict(a) for a in self.approvals],
            "acted": self.acted,
            "incident": self.incident,
            "duration_ms": _number(round(self.duration_s * 1000, 1)),
            "code": self.code,
        }
        if self.note is not None:
            described["note"] = self.note
        return described

    @classmethod
    def from_entry(
        cls, entry: Mapping[str, Any], hash_: str | None = None, at: float | None = None
    ) -> AuditRecord:
        """The inverse of :meth:`describe` (what the chain keeps, with its ``hash``).

        ``at`` is its time as the store indexes it (to the microsecond; the entry's is to the ms).

        Raises:
            KeyError, ValueError, TypeError: ``entry`` is not such a record.
        """
        kind = str(entry.get("kind", "call"))
        seq, prev = entry.get("seq"), entry.get("prev")
        when = parse_iso(entry["time"]) if at is None else at
        common = (str(entry["id"]), when, entry["principal"], entry["tool"])
        if kind in ("decision", "checkpoint"):
            fixed = {"kind", "id", "time", "principal", "tool", "seq", "prev", "hash"}
            detail = {k: v for k, v in entry.items() if k not in fixed}
            return cls(*common, kind, kind=kind, detail=detail, seq=seq, prev=prev, hash=hash_)
        return cls(
            *common,
            entry["outcome"],
            entry["arguments"],
            entry["answers"],
            tuple(entry["approvals"]),
            bool(entry["acted"]),
            entry["incident"],
            float(entry["duration_ms"]) / 1000,
            entry["code"],
            entry.get("note"),
            kind=kind,
            seq=seq,
            prev=prev,
            hash=hash_,
        )

    def body(self) -> str:
        """What the store keeps besides the indexed fields, as one JSON text."""
        return _BODY(
            {
                "o": self.outcome,
                "a": self.arguments,
                "q": self.answers,
                "p": list(self.approvals),
                "x": self.acted,
                "i": self.incident,
                "d": self.duration_s,
                "c": self.code,
                **({"n": self.note} if self.note is not None else {}),
            }
        )

    @classmethod
    def from_body(cls, id_: str, time_: float, principal: str, tool: str, text: str) -> AuditRecord:
        """The inverse of :meth:`body`, with the indexed fields given."""
        data = json.loads(text)
        return cls(
            id_,
            float(time_),
            principal,
            tool,
            data["o"],
            data["a"],
            data["q"],
            tuple(data["p"]),
            bool(data["x"]),
            data["i"],
            float(data["d"]),
            data["c"],
            data.get("n"),
        )
