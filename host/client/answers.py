"""Questions a server asks during a call, and the answers a caller (a test, a terminal) gives.

A test answers with a function of the question, a list of answers given in order, a mapping from
question key to answer, or one answer for every question; :class:`Answerer` turns any of these into
one ``{"action", "content"}`` per question, and fails the test readably when there is none.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from host.client.match import shown

__all__ = ["ACTIONS", "Answer", "Answerer", "Answers", "Elicitation", "UnansweredQuestion"]

ACTIONS = ("accept", "decline", "cancel")


class UnansweredQuestion(AssertionError):
    """The server asked a question the test gives no answer for."""


@dataclass(frozen=True)
class Elicitation:
    """One question the server asked, as a test's answer handler receives it.

    Attributes:
        key: The ``inputRequests`` key (for a spec, the name of the step that asks).
        message: The question.
        requested_schema: The form's JSON Schema.
        tool: The tool being called.
        arguments: The call's arguments.
        round: Which round of the call asked it, from 1.
        params: The ``elicitation/create`` params exactly as sent.
    """

    key: str
    message: str
    requested_schema: dict[str, Any]
    tool: str
    arguments: dict[str, Any]
    round: int
    params: dict[str, Any] = field(repr=False)
    method: str = "elicitation/create"

    @property
    def url(self) -> str | None:
        """A URL ask's page (``mode: url``); None for a form."""
        url = self.params.get("url")
        return url if isinstance(url, str) else None

    def describe(self) -> str:
        """The question as a failure message shows it."""
        if self.url is not None:
            return f"  {self.key} (round {self.round}): {self.message}\n    page: {self.url}"
        return (
            f"  {self.key} (round {self.round}): {self.message}\n"
            f"    form: {shown(self.requested_schema)}"
        )


Answer = Mapping[str, Any] | str
AnswerFunction = Callable[[Elicitation], Answer | None]
Answers = AnswerFunction | Sequence[Answer] | Mapping[str, Any]
"""What a test answers with: a function of the question, a list of answers given in order, a
mapping from question key to answer, or one answer for every question (a mapping with an
``action``, or an action name such as ``"decline"``). An answer is
``{"action": ..., "content": {...}}``, or just an action name."""


def _normalize(answer: Any, question: Elicitation) -> dict[str, Any]:
    __tracebackhide__ = True
    if isinstance(answer, str):
        answer = {"action": answer}
    if not isinstance(answer, Mapping) or not isinstance(answer.get("action"), str):
        raise UnansweredQuestion(
            f"the answer to {question.key!r} must be a mapping with an action "
            f'({{"action": "accept", "content": {{...}}}}) or one of {", ".join(ACTIONS)}; '
            f"got {answer!r}\n{question.describe()}"
        )
    return dict(answer)


class Answerer:
    """Turns a test's :data:`Answers` into one answer per question."""

    def __init__(self, answers: Answers) -> None:
        self.answers = answers
        self.queue: Iterator[Answer] | None = None
        if not callable(answers) and not isinstance(answers, Mapping | str):
            self.queue = iter(list(answers))

    def __call__(self, question: Elicitation) -> dict[str, Any]:
        __tracebackhide__ = True
        answers = self.answers
        if self.queue is not None:
            given = next(self.queue, None)
            if given is None:
                count = len(answers) if isinstance(answers, Sequence) else 0
                raise UnansweredQuestion(
                    f"{question.tool} asked another question, but the {count} answer(s) given "
                    f"were used up:\n{question.describe()}"
                )
            return _normalize(given, question)
        if isinstance(answers, str):
            return _normalize(answers, question)
        if isinstance(answers, Mapping):
            if isinstance(answers.get("action"), str):
                return _normalize(answers, question)
            if question.key not in answers:
                raise UnansweredQuestion(
                    f"{question.tool} asked {question.key!r}, which the answers do not cover "
                    f"(they answer {', '.join(map(repr, answers)) or 'nothing'}):\n"
                    f"{question.describe()}"
                )
            return _normalize(answers[question.key], question)
        if callable(answers):
            given = answers(question)
            if given is None:
                raise UnansweredQuestion(
                    f"the elicitation handler returned None for a question of {question.tool}:\n"
                    f"{question.describe()}"
                )
            return _normalize(given, question)
        raise TypeError(f"cannot answer with {answers!r}")
