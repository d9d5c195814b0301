"""Comparing results with what a test expects, and saying clearly where they differ.

``like(expected)`` is a value that equals any JSON value containing ``expected``: every key of an
expected mapping must be there with a matching value (extra keys are fine), lists must match item
for item, and scalars must be equal with their JSON type (``true`` is not ``1``).
"""

from __future__ import annotations

import difflib
import json
from collections.abc import Mapping, Sequence
from typing import Any

__all__ = ["Like", "differences", "json_diff", "like", "only_mentioned", "shown"]


def shown(value: Any) -> str:
    """A value as compact JSON, the way it went over the wire."""
    try:
        return json.dumps(value, ensure_ascii=False, sort_keys=True)
    except (TypeError, ValueError):
        return repr(value)


def differences(expected: Any, actual: Any, *, partial: bool = True, path: str = "") -> list[str]:
    """Where ``actual`` differs from ``expected``, one line per difference.

    Args:
        expected: What the test expects.
        actual: What came back.
        partial: Mappings may have keys ``expected`` does not mention.
        path: Where these values sit, for the messages (``result.ticket.id``).
    """
    where = path or "the value"
    if isinstance(expected, Like):
        return differences(expected.expected, actual, partial=True, path=path)
    if isinstance(expected, Mapping):
        if not isinstance(actual, Mapping):
            return [f"{where}: expected an object {shown(expected)}, got {shown(actual)}"]
        lines: list[str] = []
        for key, value in expected.items():
            inner = f"{path}.{key}" if path else str(key)
            if key not in actual:
                lines.append(f"{inner}: missing (expected {shown(value)})")
            else:
                lines += differences(value, actual[key], partial=partial, path=inner)
        if not partial:
            lines += [
                f"{path}.{key}: unexpected (got {shown(actual[key])})"
                if path
                else f"{key}: unexpected (got {shown(actual[key])})"
                for key in actual
                if key not in expected
            ]
        return lines
    if isinstance(expected, Sequence) and not isinstance(expected, str):
        if not isinstance(actual, Sequence) or isinstance(actual, str):
            return [f"{where}: expected a list {shown(expected)}, got {shown(actual)}"]
        if len(expected) != len(actual):
            return [
                f"{where}: expected {len(expected)} items {shown(expected)}, "
                f"got {len(actual)} {shown(actual)}"
            ]
        lines = []
        for index, (want, got) in enumerate(zip(expected, actual, strict=True)):
            lines += differences(want, got, partial=partial, path=f"{path}[{index}]")
        return lines
    if type(expected) is not type(actual) and not _both_numbers(expected, actual):
        return [f"{where}: expected {shown(expected)}, got {shown(actual)}"]
    if expected != actual:
        return [f"{where}: expected {shown(expected)}, got {shown(actual)}"]
    return []


def _both_numbers(a: Any, b: Any) -> bool:
    def number(x: Any) -> bool:
        return isinstance(x, int | float) and not isinstance(x, bool)

    return number(a) and number(b)


def json_diff(expected: Any, actual: Any) -> list[str]:
    """A unified diff of the two values as indented JSON (``-`` expected, ``+`` actual)."""

    def lines(value: Any) -> list[str]:
        try:
            text = json.dumps(value, ensure_ascii=False, sort_keys=True, indent=2)
        except (TypeError, ValueError):
            text = repr(value)
        return text.splitlines()

    return list(
        difflib.unified_diff(lines(expected), lines(actual), "expected", "actual", lineterm="", n=2)
    )


def only_mentioned(actual: Any, expected: Any) -> Any:
    """``actual`` cut down to the keys ``expected`` mentions, so a diff shows only those."""
    if isinstance(expected, Mapping) and isinstance(actual, Mapping):
        return {k: only_mentioned(v, expected[k]) for k, v in actual.items() if k in expected}
    if isinstance(expected, list) and isinstance(actual, list) and len(expected) == len(actual):
        return [only_mentioned(a, e) for a, e in zip(actual, expected, strict=True)]
    return actual


class Like:
    """Equals any value that contains :attr:`expected` (see the module's docstring)."""

    __hash__ = None  # type: ignore[assignment]

    def __init__(self, expected: Any) -> None:
        self.expected = expected

    def __eq__(self, other: object) -> bool:
        return not differences(self.expected, other)

    def __repr__(self) -> str:
        return f"like({shown(self.expected)})"


def like(expected: Any) -> Like:
    """A value equal to anything containing ``expected``: ``assert r.json() == like({...})``."""
    return Like(expected)
