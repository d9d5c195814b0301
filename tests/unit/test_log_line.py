"""``JsonFormatter.line``: the text :func:`host.logs.emit` writes is the text logging writes."""

from __future__ import annotations

import io
import json
import logging
from collections.abc import Iterator
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from host.logs import JsonFormatter, emit
from support.logs import caught_lines

_VALUES = st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=12)
_FIELDS = st.dictionaries(
    # NOTE: the head's own keys among them: a field of that name takes the head value's place.
    st.sampled_from(["ts", "level", "message", "pid", "event", "tool"]) | st.text(max_size=8),
    _VALUES | st.lists(_VALUES, max_size=3),
    max_size=6,
)
_CREATED = st.floats(min_value=0, max_value=4e9)


@given(
    fields=_FIELDS,
    created=_CREATED,
    level=st.sampled_from(["INFO", "WARNING"]),
    message=st.text(max_size=10),
)
@settings(max_examples=300, deadline=None)
def test_the_line_is_the_formatted_record_byte_for_byte(
    fields: dict[str, Any], created: float, level: str, message: str
) -> None:
    formatter = JsonFormatter()
    expected = formatter.head(created, level, "host.protocol", message)
    expected.update(fields)
    line = formatter.line(created, level, "host.protocol", message, fields)
    assert line == json.dumps(expected, ensure_ascii=False)
    record = logging.LogRecord("host.protocol", logging.INFO, __file__, 1, message, None, None)
    taken = vars(record).keys() | {"message"}
    if not fields.keys() & taken and not any(k.startswith("_") for k in fields):
        # NOTE: the fields logging's records may carry: the line is the one logging writes
        record.created, record.levelname = created, level
        record.__dict__.update(fields)
        assert line == formatter.format(record)


def test_a_field_with_an_empty_name_is_written_as_any_other() -> None:
    record = logging.LogRecord("host.protocol", logging.INFO, __file__, 1, "m", None, None)
    record.__dict__[""] = 1
    assert json.loads(JsonFormatter().format(record))[""] == 1


@pytest.fixture
def stream() -> Iterator[io.StringIO]:
    with caught_lines() as buffer:
        yield buffer


def test_lines_of_many_messages_are_each_written_whole(stream: io.StringIO) -> None:
    logger = logging.getLogger("host.protocol")
    for n in range(100):  # NOTE: more messages than the formatter keeps heads for
        emit(logger, logging.INFO, f"message {n}", {"event": "e", "n": n})
    lines = [json.loads(line) for line in stream.getvalue().splitlines()]
    assert [(line["message"], line["n"]) for line in lines] == [
        (f"message {n}", n) for n in range(100)
    ]
    assert all(list(line)[:5] == ["ts", "level", "logger", "message", "pid"] for line in lines)
