"""Moved to :mod:`host.client.answers` (``host call`` uses it too); kept for existing imports."""

from host.client.answers import (
    ACTIONS,
    Answer,
    Answerer,
    Answers,
    Elicitation,
    UnansweredQuestion,
)

__all__ = [
    "ACTIONS",
    "Answer",
    "Answerer",
    "Answers",
    "Elicitation",
    "UnansweredQuestion",
]
