"""The one owner of which answers count: a call's ledger of questions asked and answers accepted.

The product's promise is that a tool's questions come before its side effects and that nobody but
the user answers them. Here is the rule that keeps it, in one place:

    An answer is applied only to a question that this call's ledger proves was asked, with the
    same digest. Answers sent on a first round, under keys never asked, or for a question whose
    text changed since it was asked are ignored, never carried to the next round, and the
    question is asked (again).

A :class:`Ledger` travels with a call from round to round. Every way a call travels uses the same
ledger and the same encoding (:meth:`Ledger.to_payload`): sealed inside ``requestState``
(modern), kept in the store by the fallback tool, or held by the worker streaming a legacy
session's questions. Only the ledger's own round carries it forward: a round takes the answers to
the questions the previous round asked (:meth:`Ledger.take`), the machine looks each question up
as it reads now (:meth:`Ledger.answer_for`), and questions asked again drop their old answers
(:meth:`Ledger.next`).

A ledger is also bound to the definition of the tool it began under (its digest,
:attr:`host.machine.Machine.definition`): the core refuses to advance it under another, so no
carrier of a call made before a reload that changed the tool can make the new tool act. And an
answer that says no (a decline, a dismissal) held by a ledger never lets its call act
(:meth:`Ledger.refusal`), whatever the tool asks now.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from host import ids
from host.frozen import quick_init
from host.machine import Answer, Question

__all__ = ["Accepted", "Ledger"]

_ACTIONS = frozenset({"accept", "decline", "cancel"})
_NOES = frozenset({"decline", "cancel"})


@quick_init
@dataclass(frozen=True)
class Accepted:
    """An answer taken for a question, and the digest of the question it answered.

    Attributes:
        digest: :meth:`host.machine.Question.digest` of the question as it was asked.
        answer: ``{"action": ...}`` with ``content`` (only the form's fields) for an accept.
    """

    digest: str
    answer: Mapping[str, Any]


@quick_init
@dataclass(frozen=True)
class Ledger:
    """What one call knows between rounds: questions asked, answers accepted.

    NOTE: its methods make the next ledger with :meth:`_next`, the constructor with every field:
    ``dataclasses.replace`` looks the fields up anew on each call, a few times a round.

    Attributes:
        nonce: Random, constant across the rounds of one call: the key of its act's record.
        round: The round this ledger serves, from 1 (a first round: nothing asked yet).
        asked: Questions the previous round asked, by key, with their digests: the only keys
            whose answers this round takes.
        accepted: Answers accepted in earlier rounds, by key.
        started: When the call's first round started (Unix time), for the audit trail's
            duration; 0 when unknown.
        definition: The digest of the tool's definition the call began under ("" until its
            first round bound it; :meth:`bound`).
    """

    nonce: str
    round: int = 1
    asked: Mapping[str, str] = field(default_factory=dict)
    accepted: Mapping[str, Accepted] = field(default_factory=dict)
    started: float = 0.0
    definition: str = ""

    @classmethod
    def start(cls, definition: str = "") -> Ledger:
        """The ledger of a new call: a fresh nonce, nothing asked, nothing accepted; bound to
        the tool's ``definition`` when given (:meth:`bound`)."""
        return cls(ids.nonce(), 1, {}, {}, time.time(), definition)

    def take(self, responses: Mapping[str, Any], fields: Callable[[str], frozenset[str]]) -> Ledger:
        """This round's answers added: only those to questions the previous round asked.

        Args:
            responses: The answers the client sent this round, by key, as sent.
            fields: The fields each question's form asks for; other fields are dropped, so
                nothing the client adds travels further.
        """
        taken = {
            key: Accepted(digest, _clean(responses[key], fields(key)))
            for key, digest in self.asked.items()
            if key in responses
        }
        if not taken:
            return self
        accepted = {**self.accepted, **taken}
        return self._next(self.round, self.asked, accepted, self.definition)

    def bound(self, definition: str) -> Ledger:
        """This ledger bound to the tool's definition digest (done once, on the first round)."""
        return self._next(self.round, self.asked, self.accepted, definition)

    def fits(self, definition: str) -> bool:
        """Whether the call began under the tool's definition ``definition`` (unchanged since)."""
        return self.definition == definition

    def refusal(self) -> str | None:
        """The key of an accepted answer that says no (decline, cancel), if any: no act may run."""
        noes = (k for k, v in self.accepted.items() if v.answer.get("action") in _NOES)
        return next(noes, None)

    def answer_for(self, question: Question) -> Answer | None:
        """The answer to ``question`` as it reads now; None when it must be asked (again)."""
        accepted = self.accepted.get(question.key)
        if accepted is None or accepted.digest != question.digest():
            return None
        return accepted.answer

    def answered(self, keys: Iterable[str]) -> dict[str, str]:
        """The action of each accepted answer among ``keys`` (for logs and metrics)."""
        return {k: str(self.accepted[k].answer.get("action")) for k in keys if k in self.accepted}

    def answers(self) -> dict[str, Answer]:
        """Every accepted answer by key, ``{action, content}`` (for the audit trail)."""
        if not self.accepted:
            return {}  # NOTE: as most calls end: no comprehension (a frame of its own) to run
        return {k: v.answer for k, v in self.accepted.items()}

    def stale(self, questions: Iterable[Question]) -> tuple[str, ...]:
        """Keys of ``questions`` that had an answer to an earlier text of the question."""
        return tuple(q.key for q in questions if q.key in self.accepted)

    def next(self, questions: Iterable[Question]) -> Ledger:
        """The ledger of the round that answers ``questions``: their old answers dropped."""
        asked = {q.key: q.digest() for q in questions}
        kept = {k: v for k, v in self.accepted.items() if k not in asked}
        return self._next(self.round + 1, asked, kept, self.definition)

    def _next(
        self,
        round_: int,
        asked: Mapping[str, str],
        accepted: Mapping[str, Accepted],
        definition: str,
    ) -> Ledger:
        """The same call's ledger with these fields (every other one is the call's own)."""
        return Ledger(self.nonce, round_, asked, accepted, self.started, definition)

    def to_payload(self) -> dict[str, Any]:
        """The ledger as compact JSON-ready data: the one encoding every carrier uses."""
        return {
            "n": self.nonce,
            "r": self.round,
            "k": dict(self.asked),
            "a": {k: [v.digest, dict(v.answer)] for k, v in self.accepted.items()},
            "t": round(self.started, 3),
            "v": self.definition,
        }

    @classmethod
    def from_payload(cls, data: Any) -> Ledger:
        """The inverse of :meth:`to_payload`.

        Raises:
            ValueError: ``data`` is not a ledger's payload.
        """
        try:
            nonce, round_, asked, accepted = data["n"], data["r"], data["k"], data["a"]
            # NOTE: a state sealed before the start time was carried reads as "unknown".
            started = data.get("t", 0.0)
            # NOTE: a ledger sealed before definitions were carried fits no tool: "" is none.
            definition = data.get("v", "")
            ledger = cls(
                nonce,
                round_,
                asked,
                {k: Accepted(d, a) for k, (d, a) in accepted.items()},
                started,
                definition,
            )
        except (KeyError, TypeError, ValueError, AttributeError):
            raise ValueError("not a call ledger") from None
        if not (
            isinstance(started, int | float)
            and not isinstance(started, bool)
            and isinstance(nonce, str)
            and isinstance(definition, str)
            and isinstance(round_, int)
            and round_ >= 1
            and _strings(asked)
            and all(
                isinstance(k, str) and isinstance(v.digest, str) and isinstance(v.answer, dict)
                for k, v in ledger.accepted.items()
            )
        ):
            raise ValueError("not a call ledger")
        return ledger


def _clean(response: Any, fields: frozenset[str]) -> dict[str, Any]:
    """An answer with only what MCP defines: the action, and an accept's content for the form.

    NOTE: a malformed answer (no valid action, an accept without an object of content) keeps
    only what makes it malformed, so the machine rejects it with a message that says so.
    """
    if not isinstance(response, Mapping):
        return {"action": None}
    action = response.get("action")
    cleaned: dict[str, Any] = {"action": action if action in _ACTIONS else None}
    content = response.get("content")
    if action == "accept" and isinstance(content, Mapping):
        cleaned["content"] = {k: v for k, v in content.items() if k in fields}
    return cleaned


def _strings(value: Any) -> bool:
    return isinstance(value, dict) and all(
        isinstance(k, str) and isinstance(v, str) for k, v in value.items()
    )
