"""Spec examples as tests: run one ``examples:`` entry through a client and judge the outcome.

An example calls its tool with ``arguments``, answers each question from ``answers`` (by question
name), and checks ``expect``:

- ``result``: a mapping the structured result must contain (extra keys are fine), or any other
  value the structured result (or, without one, the text) must equal;
- ``error``: the JSON-RPC error code (or name, such as ``INVALID_PARAMS``) the call must fail with;
- ``is_error``: whether the result is a tool error (``isError: true``);
- ``asks``: the names of the questions asked, in order;
- ``text``: text the result's text (or the error's message) must contain;
- ``pending``: the approve step whose request the call left undecided (its result says so).

``approvals`` decides the requests of approve steps (by step name) as another person would, through
the host's own rules: ``{decision: approve|reject, by: NAME, reason: TEXT}``.

Unless it gives ``error``, ``is_error`` or ``pending``, an example expects the call to succeed. An
answer given for a question that is never asked is a failure too: it usually means the example is
out of date; so is a decision for a step whose request the call never made.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from host.client.match import differences, json_diff, only_mentioned, shown
from host.client.results import CallResult
from host.client.wire import error_code
from host.spec.model import Example
from host.testing.client import McpClient, pending_request

__all__ = ["EXPECT_KEYS", "Case", "check", "run_example"]

EXPECT_KEYS = ("result", "error", "is_error", "asks", "text", "pending")


@dataclass(frozen=True)
class Case:
    """One example of one tool, and where it is written.

    Attributes:
        tool: The tool's name.
        example: The example.
        file: The spec file it is in.
        line: Its line there (0 when unknown).
    """

    tool: str
    example: Example
    file: str
    line: int = 0

    @property
    def title(self) -> str:
        """``tool > example name``."""
        return f"{self.tool} > {self.example.name}"

    @property
    def where(self) -> str:
        """``file:line``."""
        return f"{self.file}:{self.line}" if self.line else self.file


def run_example(client: McpClient, case: Case) -> list[str]:
    """Run one example and return what went wrong (an empty list when it passed)."""
    example = case.example
    try:
        result = client.tools.call(
            case.tool,
            example.arguments,
            answers=dict(example.answers),
            approvals=dict(example.approvals) if example.approvals else None,
        )
    except (AssertionError, ValueError) as exc:
        # NOTE: unanswered questions, refused decisions and protocol violations end the call;
        # their messages already show the question, the decision or the offending message.
        return str(exc).splitlines()
    return check(result, example) + _check_approvals(client, result, example)


def _check_approvals(client: McpClient, result: CallResult, example: Example) -> list[str]:
    """``expect.pending`` names the step the call stopped at; every decision was used."""
    request = pending_request(result)
    found = client.approvals.get(request) if request else None
    step = found["step"] if found is not None else None
    problems = []
    want = example.expect.get("pending")
    if want is not None and step != want:
        where = f"it stopped at {step!r}" if step else f"it returned {_outcome(result)}"
        problems.append(f"pending: expected a request of {want!r} left undecided, but {where}")
    elif want is None and step is not None and "is_error" not in example.expect:
        problems.append(
            f"the call stopped at approve step {step!r}, undecided: decide it in approvals "
            f"(or expect: {{pending: {step}}})"
        )
    made = {r["step"] for r in client.approvals.requests()}
    unused = [name for name in example.approvals if name not in made]
    if unused:
        problems.append(
            f"approvals: given for {shown(unused)}, whose requests were never made "
            f"(made: {shown(sorted(made))})"
        )
    return problems


def check(result: CallResult, example: Example) -> list[str]:
    """What in ``result`` differs from what ``example`` expects, one line per problem."""
    expect = example.expect
    problems = [
        f"expect: unknown key {key!r} (known: {', '.join(EXPECT_KEYS)})"
        for key in expect
        if key not in EXPECT_KEYS
    ]
    problems += _check_outcome(result, expect)
    if "asks" in expect and list(expect["asks"] or []) != result.asked:
        problems.append(f"asks: expected {shown(expect['asks'])}, it asked {shown(result.asked)}")
        problems += [q.describe() for q in result.questions]
    unused = [name for name in example.answers if name not in result.asked]
    if unused:
        problems.append(
            f"answers: given for {shown(unused)}, which were never asked "
            f"(asked: {shown(result.asked)})"
        )
    if "text" in expect and str(expect["text"]) not in result.text():
        problems.append(
            f"text: expected to contain {shown(expect['text'])}, got {shown(result.text())}"
        )
    if "result" in expect and result.raw is not None:
        problems += _check_result(result, expect["result"])
    return problems


def _check_outcome(result: CallResult, expect: Mapping[str, Any]) -> list[str]:
    """Did the call fail or succeed the way the example says?"""
    error = result.error
    if "error" in expect:
        try:
            want = error_code(expect["error"])
        except (ValueError, AttributeError) as exc:
            return [f"error: {exc}"]
        if error is None:
            return [f"error: expected JSON-RPC error {want}, but it returned {_outcome(result)}"]
        if error.code != want:
            return [f"error: expected JSON-RPC error {want}, got {error}"]
        return []
    if error is not None:
        return [f"the call failed with {error}"]
    if result.raw is None:
        return [f"the response is not a JSON-RPC response: {result.response}"]
    # NOTE: a request left pending ends the call with a tool error that says so
    want_tool_error = bool(expect.get("is_error", "pending" in expect))
    if result.is_error != want_tool_error:
        if want_tool_error:
            return [f"is_error: expected a tool error, but it returned {_outcome(result)}"]
        return [f"the call returned a tool error: {shown(result.text())}"]
    return []


def _check_result(result: CallResult, expected: Any) -> list[str]:
    raw = result.raw or {}
    actual = raw["structuredContent"] if "structuredContent" in raw else result.text()
    lines = differences(expected, actual, partial=True, path="result")
    if lines:
        lines += json_diff(expected, only_mentioned(actual, expected))
    return lines


def _outcome(result: CallResult) -> str:
    raw = result.raw or {}
    body = raw.get("structuredContent", result.text())
    kind = "a tool error" if result.is_error else "a result"
    return f"{kind}: {shown(body)}"
