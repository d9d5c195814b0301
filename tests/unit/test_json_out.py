"""``host.jsonvalues.dumps``: a reply, event or stdio line with its result's JSON made once."""

from __future__ import annotations

import datetime
import decimal
import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from host.jsonvalues import Encoded, dumps, encoded, encoder, foreign
from host.machine import Outcome
from host.protocol.jsonrpc import success


def _reply(value: Any) -> dict[str, Any]:
    return success(7, Outcome.from_value(value).to_result())


@pytest.mark.parametrize("compact", [False, True])
def test_a_result_reads_back_the_same_as_a_plain_encoding(compact: bool) -> None:
    value = {"items": [{"id": f"T-{n}", "title": "naïve café ☕", "n": n} for n in range(50)]}
    message = _reply(value)
    text = dumps(message, compact=compact)
    assert json.loads(text) == json.loads(json.dumps(message))
    assert json.loads(text)["result"]["structuredContent"] == value
    assert "host-encoded" not in text


def test_the_structured_content_is_the_text_made_once() -> None:
    message = _reply({"n": 1})
    # NOTE: an Encoded whose text says otherwise shows which one the reply writes.
    message["result"]["structuredContent"] = Encoded({"n": 1}, '{"n": 2}')
    assert json.loads(dumps(message))["result"]["structuredContent"] == {"n": 2}


def test_a_string_like_the_placeholder_is_written_as_it_is() -> None:
    sneaky = "\x00host-encoded-" + "0" * 32 + "\x00"
    message = _reply({"note": sneaky})
    message["result"]["content"].append({"type": "text", "text": sneaky})
    decoded = json.loads(dumps(message))
    assert decoded["result"]["content"][1]["text"] == sneaky
    assert decoded["result"]["structuredContent"] == {"note": sneaky}


def test_messages_without_an_encoded_result_are_encoded_as_json_does() -> None:
    for message in (
        {"jsonrpc": "2.0", "id": 1, "result": {"tools": []}},
        {"jsonrpc": "2.0", "id": 1, "result": {"structuredContent": {"a": 1}}},
        {"jsonrpc": "2.0", "method": "notifications/message", "params": {"data": "é"}},
        {"jsonrpc": "2.0", "id": None, "error": {"code": -32600, "message": "no"}},
    ):
        assert dumps(message) == json.dumps(message, ensure_ascii=False)
        assert dumps(message, compact=True) == json.dumps(
            message, ensure_ascii=False, separators=(",", ":")
        )


def test_nan_is_refused_where_the_line_must_be_strict() -> None:
    message = {"jsonrpc": "2.0", "id": 1, "result": {"x": float("nan")}}
    with pytest.raises(ValueError):
        dumps(message, compact=True, allow_nan=False)


_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(),
    lambda inner: st.lists(inner) | st.dictionaries(st.text(), inner),
    max_leaves=25,
)
_OPTIONS = [
    {"sort_keys": s, "compact": c, "ensure_ascii": a, "allow_nan": n}
    for s in (False, True)
    for c in (False, True)
    for a in (False, True)
    for n in (False, True)
]
_ENCODERS = [(options, encoder(**options)) for options in _OPTIONS]


@settings(max_examples=300, deadline=None)
@given(_VALUES)
def test_an_encoder_made_once_writes_what_json_dumps_writes(value: Any) -> None:
    """Digests and seals depend on it: a text that changed would orphan every open call."""
    for options, encode in _ENCODERS:
        separators = (",", ":") if options["compact"] else None
        try:
            want = json.dumps(
                value, sort_keys=options["sort_keys"], separators=separators,
                ensure_ascii=options["ensure_ascii"], allow_nan=options["allow_nan"],
            )  # fmt: skip
        except ValueError:
            with pytest.raises(ValueError):
                encode(value)
            continue
        assert encode(value) == want


def test_an_encoder_made_once_names_what_it_cannot_write() -> None:
    with pytest.raises(TypeError, match="Object of type object is not JSON serializable"):
        encoder()({"a": object()})
    assert encoder(default=str)({"n": 1.5, "d": Path("/x")}) == '{"n": 1.5, "d": "/x"}'


_FOREIGN_VALUES = [
    {"when": datetime.datetime(2026, 1, 2, 3, 4, 5), "cost": decimal.Decimal("1.10")},
    ["naïve ☕", 1, 2.5, None, True, {"nested": [{}]}],
    "plain",
    3,
    {"nan": float("nan")},
]


@pytest.mark.parametrize("allow_nan", [False, True])
@pytest.mark.parametrize("value", _FOREIGN_VALUES)
def test_foreign_writes_what_json_dumps_writes(value: Any, allow_nan: bool) -> None:
    try:
        expected = json.dumps(value, ensure_ascii=False, default=str, allow_nan=allow_nan)
    except ValueError:
        with pytest.raises(ValueError, match="float"):
            foreign(value, allow_nan=allow_nan)
        return
    text, converted = foreign(value, allow_nan=allow_nan)
    assert text == expected
    assert converted == (value is _FOREIGN_VALUES[0])


def test_foreign_refuses_a_value_that_contains_itself_and_recovers() -> None:
    looped: dict[str, Any] = {"a": [1]}
    looped["a"].append(looped)
    with pytest.raises(ValueError, match="Circular"):
        foreign(looped, allow_nan=True)
    # NOTE: the same objects again, fine now: nothing of the failed encoding is remembered.
    looped["a"].pop()
    assert foreign(looped, allow_nan=True) == ('{"a": [1]}', False)


_IDS = st.integers() | st.text() | st.booleans() | st.none() | st.floats(allow_nan=False)
_FINITE = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(), inner, max_size=3),
    max_leaves=12,
)
_RESULTS = st.dictionaries(st.text(max_size=6), _FINITE, max_size=4)


@settings(max_examples=300, deadline=None)
@given(_IDS, _RESULTS, st.none() | _RESULTS, st.none() | _RESULTS, st.booleans(), st.booleans())
def test_a_reply_written_from_its_parts_is_what_json_dumps_writes(
    request_id: Any,
    result: dict[str, Any],
    content: dict[str, Any] | None,
    meta: dict[str, Any] | None,
    as_response: bool,
    compact: bool,
) -> None:
    """The envelope, an Encoded structuredContent and an Encoded _meta are written from text
    made before: the bytes must be those of encoding the whole message."""
    plain = dict(result)
    spliced = dict(result)
    if content is not None:
        plain["structuredContent"] = content
        text = json.dumps(content, ensure_ascii=False)
        spliced["structuredContent"] = Encoded(content, text)
    if meta is not None:
        plain["_meta"] = meta
        spliced["_meta"] = encoded(meta)
    key = "result" if as_response else "other"
    message = {"jsonrpc": "2.0", "id": request_id, key: spliced}
    separators = (",", ":") if compact and content is None else None
    want = json.dumps({**message, key: plain}, ensure_ascii=False, separators=separators)
    if compact and content is not None:
        # NOTE: compact, the structured content keeps its own text: compare what it reads as
        assert json.loads(dumps(message, compact=True)) == json.loads(want)
    else:
        assert dumps(message, compact=compact) == want
