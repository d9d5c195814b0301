"""What a test gets back: the tools a server lists and the outcome of one tool call.

Both read like the assertions a test makes: ``"close_ticket" in mcp.tools.list()``,
``result.json()``, ``result.assert_error("INVALID_PARAMS")``; each failure message shows what the
server actually sent.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any, Self

from host.client.answers import Elicitation
from host.client.match import differences, json_diff, only_mentioned, shown
from host.client.wire import RawResponse, RpcError, error_code

__all__ = ["CallResult", "ProtocolViolation", "ToolList"]


class ProtocolViolation(AssertionError):
    """The server sent something a conforming client must refuse."""


class ToolList(list[dict[str, Any]]):
    """The tools a server listed; ``"name" in tools`` checks by name."""

    @property
    def names(self) -> list[str]:
        """The tools' names, in the server's order."""
        return [str(tool.get("name")) for tool in self]

    def __contains__(self, item: object) -> bool:
        if isinstance(item, str):
            return item in self.names
        return super().__contains__(item)

    def get(self, name: str) -> dict[str, Any] | None:
        """The tool called ``name``, or None."""
        return next((tool for tool in self if tool.get("name") == name), None)

    def __repr__(self) -> str:
        return f"ToolList({self.names!r})"


@dataclass(frozen=True)
class CallResult:
    """What a ``tools/call`` came to, after every round.

    Attributes:
        tool: The tool called.
        arguments: Its arguments.
        response: The last response (the result, or a JSON-RPC error).
        rounds: How many ``tools/call`` requests the exchange took.
        questions: Every question asked during the call, in order.
        exchanges: Every response, first round first.
    """

    tool: str
    arguments: dict[str, Any]
    response: RawResponse
    rounds: int
    questions: tuple[Elicitation, ...] = ()
    exchanges: tuple[RawResponse, ...] = field(default=(), repr=False)

    @property
    def error(self) -> RpcError | None:
        """The JSON-RPC error the call ended with, or None."""
        return self.response.error

    @property
    def raw(self) -> dict[str, Any] | None:
        """The ``CallToolResult`` as sent, or None after a JSON-RPC error."""
        result = self.response.result
        return result if isinstance(result, dict) else None

    @property
    def is_error(self) -> bool:
        """True for a tool error: a result with ``isError: true`` (not a JSON-RPC error)."""
        return bool(self.raw and self.raw.get("isError") is True)

    @property
    def ok(self) -> bool:
        """True when the call finished with a result that is not a tool error."""
        return self.error is None and self.raw is not None and not self.is_error

    @property
    def content(self) -> list[dict[str, Any]]:
        """The result's content blocks (empty after a JSON-RPC error)."""
        content = (self.raw or {}).get("content")
        return content if isinstance(content, list) else []

    @property
    def asked(self) -> list[str]:
        """The keys of the questions asked, in order."""
        return [q.key for q in self.questions]

    def json(self) -> Any:
        """The structured result (``structuredContent``, else the text parsed as JSON).

        Raises:
            AssertionError: The call ended in a JSON-RPC error or has no JSON to read.
        """
        __tracebackhide__ = True
        if self.raw is None:
            raise AssertionError(f"{self._name()} has no result to read: {self._failure()}")
        if "structuredContent" in self.raw:
            return self.raw["structuredContent"]
        text = self.text()
        try:
            return json.loads(text)
        except ValueError:
            raise AssertionError(
                f"{self._name()} returned no structuredContent and its text is not JSON: {text!r}"
            ) from None

    def text(self) -> str:
        """The text content joined by newlines; for a JSON-RPC error, its message and data."""
        if self.raw is None:
            error = self.error
            if error is None:
                return self.response.text
            data = "" if error.data is None else "\n" + shown(error.data)
            return error.message + data
        return "\n".join(
            str(block.get("text", "")) for block in self.content if block.get("type") == "text"
        )

    def assert_ok(self) -> Self:
        """Fail unless the call finished with a result that is not a tool error."""
        __tracebackhide__ = True
        if not self.ok:
            raise AssertionError(f"expected {self._name()} to succeed, but {self._failure()}")
        return self

    def assert_error(self, code: int | str | None = None, *, message: str | None = None) -> Self:
        """Fail unless the call ended in a JSON-RPC error (with ``code``, and ``message`` in it).

        Args:
            code: A number or a name such as ``INVALID_PARAMS`` (see ``ERROR_NAMES``).
            message: Text the error's message must contain.
        """
        __tracebackhide__ = True
        error = self.error
        want = f" {error_code(code)}" if code is not None else ""
        if error is None:
            raise AssertionError(
                f"expected {self._name()} to fail with JSON-RPC error{want}, "
                f"but it returned {self._summary()}"
            )
        if code is not None and error.code != error_code(code):
            raise AssertionError(f"expected JSON-RPC error{want}, got {error}")
        if message is not None and message not in error.message:
            raise AssertionError(f"expected the error message to contain {message!r}, got {error}")
        return self

    def assert_tool_error(self, text: str | None = None) -> Self:
        """Fail unless the call returned a tool error (``isError: true``), with ``text`` in it."""
        __tracebackhide__ = True
        if not self.is_error:
            raise AssertionError(
                f"expected {self._name()} to return a tool error, but {self._failure()}"
            )
        if text is not None and text not in self.text():
            raise AssertionError(
                f"expected the tool error to contain {text!r}, got {self.text()!r}"
            )
        return self

    def assert_json(self, expected: Any, *, partial: bool = False) -> Self:
        """Fail unless the structured result equals ``expected`` (or contains it, ``partial``)."""
        __tracebackhide__ = True
        actual = self.json()
        problems = differences(expected, actual, partial=partial)
        if problems:
            lines = [
                f"{self._name()} returned a different result:",
                *problems,
                *json_diff(expected, only_mentioned(actual, expected) if partial else actual),
            ]
            raise AssertionError("\n".join(lines))
        return self

    def assert_asked(self, *keys: str) -> Self:
        """Fail unless exactly these questions were asked, in this order."""
        __tracebackhide__ = True
        if list(keys) != self.asked:
            shown_questions = "\n".join(q.describe() for q in self.questions) or "  (none)"
            raise AssertionError(
                f"expected {self._name()} to ask {list(keys)}, it asked {self.asked}:\n"
                f"{shown_questions}"
            )
        return self

    def _name(self) -> str:
        return f"{self.tool}({shown(self.arguments)})"

    def _summary(self) -> str:
        if self.raw is None:
            return str(self.response)
        kind = "a tool error" if self.is_error else "a result"
        body = self.raw.get("structuredContent", self.text())
        return f"{kind} after {self.rounds} round(s): {shown(body)}"

    def _failure(self) -> str:
        if self.error is not None:
            return f"it failed with {self.error}"
        if self.raw is None:
            return f"the response was not a JSON-RPC response: {self.response}"
        if self.is_error:
            return f"it returned a tool error: {self.text()!r}"
        return f"it returned {self._summary()}"

    def __repr__(self) -> str:
        return f"CallResult({self._name()}, {self._summary()})"
