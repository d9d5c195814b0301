"""What a machine returns and what it is given: the contract between machine and protocol.

The protocol layer sees tools only through these types and :class:`host.machine.run.Machine`.
Schemas here are plain JSON-ready dicts in their 2026-07-28 form; downgrading them for older
revisions is the protocol's job (see :mod:`host.machine.forms`).
"""

from __future__ import annotations

import base64
import hashlib
import json
import logging
import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from host.errors import HostError
from host.machine.content import for_revision

__all__ = [
    "Answer",
    "AnswerMismatch",
    "CallContext",
    "NeedInput",
    "Once",
    "Outcome",
    "ProgressSink",
    "Question",
]

Action = Literal["accept", "decline", "cancel"]
Answer = Mapping[str, Any]
"""One answer as the client sent it: ``{"action": ..., "content": {...}}``."""


@dataclass(frozen=True)
class Question:
    """One question to ask now.

    Attributes:
        key: The ``inputRequests`` key: the name of the step that asks it.
        message: The rendered message.
        schema: The rendered ``requestedSchema`` (2026-07-28 form).
    """

    key: str
    message: str
    schema: dict[str, Any]

    def params(self) -> dict[str, Any]:
        """The ``elicitation/create`` params for this question."""
        return {"mode": "form", "message": self.message, "requestedSchema": self.schema}

    def digest(self) -> str:
        """A short digest of what was asked: an answer applies only to the question it answers."""
        text = json.dumps([self.key, self.message, self.schema], sort_keys=True, ensure_ascii=False)
        raw = hashlib.sha256(text.encode("utf-8")).digest()[:12]
        return base64.urlsafe_b64encode(raw).decode("ascii")


@dataclass(frozen=True)
class NeedInput:
    """The machine stopped at questions that need the user's answers before it can go on.

    Attributes:
        reasked: Keys whose answers were dropped because the question changed since it was asked.
    """

    questions: tuple[Question, ...]
    reasked: tuple[str, ...] = ()


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
    """

    content: list[dict[str, Any]]
    structured: Any = None
    is_error: bool = False
    acted: bool = False
    incident: str | None = None
    replayed: bool = False

    @classmethod
    def from_value(cls, value: Any, *, acted: bool = False) -> Outcome:
        """Wrap a handler's or template's value: mappings and lists become structured content."""
        if value is None:
            return cls(content=[], acted=acted)
        if isinstance(value, str):
            return cls(content=[{"type": "text", "text": value}], acted=acted)
        text = json.dumps(value, ensure_ascii=False, default=str)
        structured = value if isinstance(value, dict) else {"result": value}
        return cls(content=[{"type": "text", "text": text}], structured=structured, acted=acted)

    @classmethod
    def error(cls, text: str, *, incident: str | None = None) -> Outcome:
        """A tool error result the model can read and act on."""
        return cls(content=[{"type": "text", "text": text}], is_error=True, incident=incident)

    def to_result(self, *, structured: bool = True, version: str | None = None) -> dict[str, Any]:
        """The ``CallToolResult`` members.

        Args:
            structured: False for revisions before 2025-06-18 (no ``structuredContent``).
            version: A legacy revision: content blocks it does not know are rewritten
                (:func:`host.machine.content.for_revision`). None sends them as they are.
        """
        content = self.content if version is None else for_revision(self.content, version)
        result: dict[str, Any] = {"content": content}
        if structured and self.structured is not None:
            result["structuredContent"] = self.structured
        if self.is_error:
            result["isError"] = True
        return result

    def to_json(self) -> str:
        """Serialize for the at-most-once store."""
        return json.dumps(
            {"c": self.content, "s": self.structured, "e": self.is_error, "i": self.incident}
        )

    @classmethod
    def from_json(cls, text: str) -> Outcome:
        """The inverse of :meth:`to_json`: the act's recorded result, replayed."""
        data = json.loads(text)
        return cls(data["c"], data["s"], data["e"], True, data["i"], replayed=True)


ProgressSink = Callable[[float, "float | None", "str | None"], None]
"""Sends one progress report (progress, total, message) to the client that asked for them."""

Once = Callable[[Callable[[], Outcome]], Outcome]
"""Runs the act at most once for this call, across workers, returning the recorded outcome."""


def _run_directly(act: Callable[[], Outcome]) -> Outcome:
    return act()


@dataclass
class CallContext:
    """What a handler's ``ctx`` parameter receives, and what the host needs to run one call.

    Attributes:
        principal: Who is calling (the authenticated identity, or ``anonymous``).
        tool: The tool's name.
        data_dir: The host's data directory, for handlers that keep files.
        log: A logger for the handler.
        round: Which round of the exchange this is, from 1.
        once: The at-most-once guard around the act (the store's, when serving).
        report: Where :meth:`progress` sends reports: set by the protocol when the client asked
            for progress and can receive it; None makes :meth:`progress` a no-op.
    """

    principal: str = "anonymous"
    tool: str = ""
    data_dir: Path = field(default_factory=lambda: Path(".host"))
    log: logging.Logger = field(default_factory=lambda: logging.getLogger("host.handler"))
    round: int = 1
    once: Once = _run_directly
    report: ProgressSink | None = None

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


class AnswerMismatch(HostError):
    """An accepted answer does not match the form it answers.

    Args:
        key: The question's key.
        errors: One ``{"field": ..., "message": ...}`` per problem.
    """

    MESSAGE = "The elicitation answer does not match the requested schema"

    def __init__(self, key: str, errors: list[dict[str, str]]) -> None:
        super().__init__(self.MESSAGE)
        self.key = key
        self.errors = errors
