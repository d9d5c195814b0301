"""A compiled tool and its run loop.  (CONTRACT STUB: being implemented.)"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from host.machine.types import Answer, CallContext, NeedInput, Outcome


class Machine:
    """One compiled tool.

    Attributes (all read-only, ready for tools/list):
        name, title, description: str / str | None / str
        input_schema: dict, the arguments' JSON Schema (type: object)
        output_schema: dict | None
        annotations: dict
        asks: bool, True when some step can ask the user a question
    """

    name: str
    title: str | None
    description: str
    input_schema: dict[str, Any]
    output_schema: dict[str, Any] | None
    annotations: dict[str, Any]
    asks: bool

    def describe(self) -> dict[str, Any]:
        """The MCP ``Tool`` object for tools/list."""
        raise NotImplementedError

    def check_arguments(self, arguments: Mapping[str, Any]) -> Outcome | None:
        """An ``isError`` outcome telling the model what to fix, or None when the arguments are valid."""
        raise NotImplementedError

    def run(
        self, arguments: Mapping[str, Any], answers: Mapping[str, Answer], ctx: CallContext
    ) -> NeedInput | Outcome:
        """Run one round: reads, then questions in order, then (all accepted) the act via ``ctx.once``.

        ``answers`` holds every answer known so far (earlier rounds' and this round's), by key.
        Raises ``AnswerMismatch`` when an accepted answer does not fit its form.
        """
        raise NotImplementedError
