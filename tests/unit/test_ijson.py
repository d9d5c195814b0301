"""Strict JSON reads what ``json.loads`` reads, the same way, and refuses what I-JSON forbids.

:func:`host.protocol.ijson.loads` calls the json module's C scanner itself and tells UTF-8 bodies
without ``json.detect_encoding``: generated documents, in every encoding ``json.loads`` reads,
must parse to the same value, and broken ones fail with the same message.
"""

from __future__ import annotations

import codecs
import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from host.protocol.ijson import StrictJsonError, loads

TEXT = st.text(st.characters(exclude_categories=("Cs",)), max_size=8)
VALUES = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**64), max_value=2**64)
    | st.floats(allow_nan=False, allow_infinity=False)
    | TEXT,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(TEXT, inner, max_size=4),
    max_leaves=12,
)
ENCODINGS = ["utf-8", "utf-8-sig", "utf-16", "utf-16-le", "utf-16-be", "utf-32", "utf-32-le"]


def outcome(parse: Any, body: bytes | str) -> Any:
    try:
        return parse(body)
    except ValueError as exc:
        return type(exc).__name__, str(exc)


@settings(max_examples=150, deadline=None)
@given(VALUES, st.sampled_from(ENCODINGS), st.booleans(), st.sampled_from(["", " ", "\n\t "]))
def test_a_document_reads_as_json_loads_reads_it(
    value: Any, encoding: str, ascii_only: bool, space: str
) -> None:
    text = space + json.dumps(value, ensure_ascii=ascii_only) + space
    body = text.encode(encoding)
    assert loads(body) == json.loads(body)
    assert loads(text) == json.loads(text)


@settings(max_examples=150, deadline=None)
@given(st.binary(max_size=12) | st.text(max_size=8).map(lambda t: t.encode("utf-8", "replace")))
def test_broken_bytes_fail_as_json_loads_fails(body: bytes) -> None:
    try:
        expected = json.loads(body)
    except (ValueError, RecursionError) as exc:
        assert outcome(loads, body) == (type(exc).__name__, str(exc))
    else:
        # NOTE: a few random documents are JSON; those need only read the same (or be refused
        # for what I-JSON forbids)
        got = outcome(loads, body)
        assert got == expected or got[0] in ("StrictJsonError", "_DuplicateKey")


@pytest.mark.parametrize(
    "body",
    [b"", b"  ", b"{", b'{"a": 1} x', b"[1,", b"\xef\xbb\xbf", b"{\x00", b"\xff", b'{"a"\x00'],
)
def test_the_edges_fail_as_json_loads_fails(body: bytes) -> None:
    with pytest.raises(ValueError) as expected:
        json.loads(body)
    assert outcome(loads, body) == (type(expected.value).__name__, str(expected.value))


@pytest.mark.parametrize("encoding", ["utf-8", "utf-16-le", "utf-16", "utf-32"])
@pytest.mark.parametrize("raw", ['"\\ud800"', '"\\uDC00x"', '"\ud800"'])
def test_a_lone_surrogate_is_refused_in_every_encoding(encoding: str, raw: str) -> None:
    body = ('{"a": [' + raw + "]}").encode(encoding, "surrogatepass")
    with pytest.raises(StrictJsonError, match=r"lone surrogate .* at /a/0;"):
        loads(body)


@pytest.mark.parametrize("encoding", ["utf-8", "utf-16"])
@pytest.mark.parametrize(
    "document", ['{"a": 1, "a": 2}', '{"x": NaN}', '{"x": [1e999]}', '{"x": -Infinity}']
)
def test_what_i_json_forbids_is_refused_in_every_encoding(encoding: str, document: str) -> None:
    with pytest.raises(StrictJsonError):
        loads(document.encode(encoding))


def test_a_pair_of_surrogates_is_one_character() -> None:
    assert loads(b'{"a": "\\ud83d\\ude00"}') == {"a": "\U0001f600"}
    assert codecs.BOM_UTF8 + b"{}" != b"{}" and loads(codecs.BOM_UTF8 + b"{}") == {}
