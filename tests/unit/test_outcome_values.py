"""A handler's value as a call's result: the structured content is the same JSON as the text.

A handler may return what JSON has no form for (a row's datetime, a Decimal, a metric's NaN). The
text content was always written with such values as their ``str()``, but the structured content
kept the objects themselves, so the reply could not be encoded: the client got an HTTP 500 after
the act had run, and the act's record could not be written. Now both are the same strict JSON.
"""

from __future__ import annotations

import datetime
import decimal
import json
from typing import Any

import pytest

from host.jsonvalues import Encoded
from host.machine import Outcome


def _strict(text: str) -> Any:
    def refuse(name: str) -> None:
        raise AssertionError(f"{name} is not JSON")

    return json.loads(text, parse_constant=refuse)


@pytest.mark.parametrize(
    ("value", "structured"),
    [
        ({"at": datetime.datetime(2026, 12, 2, 1, 2, 3)}, {"at": "2026-12-02 01:02:03"}),
        ({"total": decimal.Decimal("1.10")}, {"total": "1.10"}),
        ({"ratio": float("nan"), "most": float("inf")}, {"ratio": "nan", "most": "inf"}),
        ([datetime.date(2026, 12, 2)], {"result": ["2026-12-02"]}),
        ({"nested": [{"when": datetime.date(2026, 1, 1), "n": 1.5}]},
         {"nested": [{"when": "2026-01-01", "n": 1.5}]}),
        ({"name": "caf\udce9", "ok": "café"}, {"name": "caf\ufffd", "ok": "café"}),
    ],
)  # fmt: skip
def test_values_json_has_no_form_for_are_the_same_in_the_text_and_the_structure(
    value: Any, structured: dict[str, Any]
) -> None:
    outcome = Outcome.from_value(value)
    assert outcome.structured == structured
    (block,) = outcome.content
    wrapped = structured if isinstance(value, dict) else structured["result"]
    assert _strict(block["text"]) == wrapped
    # Every encoder after this point takes the result as it is: the reply, the act's record.
    reply = json.dumps(outcome.to_result(), ensure_ascii=False).encode()  # as the host sends it
    assert _strict(reply.decode()) == {
        "content": [block],
        "structuredContent": structured,
    }
    assert Outcome.from_json(outcome.to_json()).to_result()["structuredContent"] == structured


def test_a_plain_json_value_is_encoded_once_for_both() -> None:
    value = {"emails": ["a", "b"], "n": 2, "ok": True, "none": None}
    outcome = Outcome.from_value(value)
    assert outcome.structured == value
    (block,) = outcome.content
    assert json.loads(block["text"]) == value
    # NOTE: the reply writes the structured content from the text block's JSON, made once.
    assert isinstance(outcome.structured, Encoded) and outcome.structured.text is block["text"]


def test_the_acts_record_keeps_the_text_made_once_and_replays_the_same_result() -> None:
    outcome = Outcome.from_value({"title": "naïve café ☕", "n": [1, 2]}, acted=True)
    replayed = Outcome.from_json(outcome.to_json())
    assert replayed.to_result() == outcome.to_result() and replayed.replayed
    # NOTE: an Encoded whose text says otherwise shows which one the record writes.
    changed = Outcome(outcome.content, Encoded({"n": 1}, '{"n": 2}'), acted=True)
    assert Outcome.from_json(changed.to_json()).structured == {"n": 2}


def test_a_value_that_is_no_object_is_wrapped_with_its_text() -> None:
    outcome = Outcome.from_value([1, "two", None])
    assert isinstance(outcome.structured, Encoded)
    assert json.loads(outcome.structured.text) == outcome.structured == {"result": [1, "two", None]}


def test_a_text_result_with_a_lone_surrogate_can_be_sent_as_utf_8() -> None:
    (block,) = Outcome.from_value("read caf\udce9 from disk").content
    assert block["text"] == "read caf\ufffd from disk"
    assert Outcome.from_value("café").content[0]["text"] == "café"


def test_a_circular_value_is_refused_not_recursed_into() -> None:
    value: dict[str, Any] = {}
    value["self"] = value
    with pytest.raises(ValueError, match="Circular"):
        Outcome.from_value(value)
