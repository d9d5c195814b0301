"""``like()`` and the difference messages the kit prints."""

from __future__ import annotations

from host.client.match import differences, json_diff
from host.testing import like


def test_like_matches_a_subset_and_refuses_a_difference() -> None:
    actual = {"id": "T-1", "closed": False, "reason": "no"}
    assert actual == like({"closed": False})
    assert actual != like({"closed": True})
    assert actual != like({"missing": 1})
    assert like([1, {"a": 1}]) == [1, {"a": 1, "b": 2}]
    assert like([1]) != [1, 2]


def test_json_types_are_not_confused() -> None:
    assert differences(True, 1) == ["the value: expected true, got 1"]
    assert differences(1, 1.0) == []
    assert differences("1", 1) == ['the value: expected "1", got 1']


def test_differences_name_the_path() -> None:
    lines = differences({"a": {"b": [1, {"c": 2}]}}, {"a": {"b": [1, {"c": 3}]}})
    assert lines == ["a.b[1].c: expected 2, got 3"]
    assert differences({"x": 1}, {}) == ["x: missing (expected 1)"]
    assert differences({"x": 1}, {"x": 1, "y": 2}, partial=False) == ["y: unexpected (got 2)"]
    assert differences([1], [1, 2], path="r") == [
        "r: expected 1 items [1], got 2 [1,2]".replace("[1,2]", "[1, 2]")
    ]


def test_json_diff_marks_expected_and_actual() -> None:
    diff = json_diff({"a": 1}, {"a": 2})
    assert diff[:2] == ["--- expected", "+++ actual"]
    assert '-  "a": 1' in diff
    assert '+  "a": 2' in diff
