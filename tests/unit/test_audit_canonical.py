"""The chain's canonical JSON is RFC 8785's, byte for byte, on its fast path and off it.

:func:`host.store.chain.canonical` encodes with the json module when that gives the same bytes as
rfc8785 and hands the rest to rfc8785; generated values (text across Unicode, lone surrogates
aside, whole and fractional floats of every size, integers around 2**53) must come out the same
as rfc8785 makes them.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

import rfc8785
from hypothesis import given, settings
from hypothesis import strategies as st

from host.store.chain import (
    _LONG,
    _LONG_FIRST,
    GENESIS,
    Chain,
    _cut_slowly,
    _long_integer,
    _risky,
    canonical,
    prepare,
)
from host.store.records import ACTED, ENDED, STARTED, AuditRecord

TEXT = st.text(st.characters(exclude_categories=("Cs",)), max_size=12)
SCALARS = (
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**53) + 1, max_value=2**53 - 1)
    | st.floats(allow_nan=False, allow_infinity=False)
    | TEXT
)
VALUES = st.recursive(
    SCALARS,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(TEXT, inner, max_size=4),
    max_leaves=12,
)


@settings(max_examples=150, deadline=None)
@given(VALUES)
def test_canonical_is_rfc8785(value: Any) -> None:
    assert canonical(value) == rfc8785.dumps(value)


def test_what_rfc8785_refuses_is_kept_as_text() -> None:
    assert canonical({"n": 2**60, "x": float("nan")}) == b'{"n":"1152921504606846976","x":"nan"}'


def test_the_cases_the_json_module_writes_otherwise() -> None:
    for value, expected in [
        (1.0, b"1"), (-0.0, b"0"), (1e16, b"10000000000000000"), (1e21, b"1e+21"),
        (0.00001, b"0.00001"), (1e-7, b"1e-7"), ({"\ue000": 1, "\U0001f600": 2}, None),
    ]:  # fmt: skip
        assert canonical(value) == (expected or rfc8785.dumps(value))


SEQS = st.integers(min_value=0, max_value=2**60) | st.sampled_from([1, 10**15 - 1, 10**15, 2**53])
PREVS = st.sampled_from([GENESIS, "ab" * 32]) | TEXT


@settings(max_examples=150, deadline=None)
@given(
    st.dictionaries(TEXT, VALUES, max_size=4),
    st.dictionaries(st.sampled_from(["request", "reason", "prev", "seq", "zz"]), VALUES),
    SEQS,
    PREVS,
    st.sampled_from([STARTED, ENDED, ACTED]),
)
def test_a_linked_entry_is_its_rfc8785_text(
    arguments: dict[str, Any], detail: dict[str, Any], seq: int, prev: str, rank: int
) -> None:
    """The entry is encoded once, cut where seq and prev go, and joined with them: the same
    bytes as RFC 8785 makes of the whole entry, for a call's record and a decision's."""
    call = AuditRecord("c1", 1.5, "alice", "restart", "acted", arguments=arguments, note="n")
    decision = AuditRecord("d1", 2.25, "bob", "restart", "approved", kind="decision", detail=detail)
    for record in (call, decision):
        prepared = prepare(record, rank)
        link = Chain._linked(prepared, seq, prev)
        entry = {**record.entry(), "seq": seq, "prev": prev}
        if rank == STARTED:
            entry["kind"] = "started"
        assert link.body.encode() == canonical(entry)
        assert prepared.parts == _cut_slowly(entry)
        assert link.hash == hashlib.sha256(link.body.encode()).hexdigest()


def test_a_value_that_holds_a_stand_in_is_encoded_the_slow_way() -> None:
    record = AuditRecord("c1", 1.5, "alice", "t", "acted", arguments={"x": "\x00chain-seq\x00"})
    link = Chain._linked(prepare(record, ACTED), 7, GENESIS)
    assert json.loads(link.body)["arguments"] == {"x": "\x00chain-seq\x00"}
    assert json.loads(link.body)["seq"] == 7


def test_long_integers_are_found_where_an_integer_can_start() -> None:
    for text in ['{"a":1234567890123456}', "[-1234567890123456]", "1234567890123456", "[1,1e+16]"]:
        assert _risky(text), text
    for text in ['{"id":"12345678901234567890"}', '{"a":123456789012345}', '"1234567890123456"']:
        assert not _risky(text), text


def test_sixteen_digits_in_a_row_that_start_no_integer_are_not_risky() -> None:
    digest = "ab" + "1234567890123456" * 2 + "cd"
    assert not _risky(f'{{"hash":"{digest}","n":[1,2]}}')
    assert _risky(f'{{"hash":"{digest}","n":[1,12345678901234567]}}')


# NOTE: runs of 14 to 18 digits between separators, so both answers come up often.
_PIECES = st.one_of(
    st.sampled_from([":", ",", "[", "-", '"', "a"]), st.text("0123456789", min_size=14, max_size=18)
)


@given(st.lists(_PIECES, max_size=8).map("".join))
def test_the_pass_over_the_bytes_agrees_with_the_patterns(text: str) -> None:
    by_patterns = _LONG.search(text) is not None or _LONG_FIRST.match(text) is not None
    assert _long_integer(text) == by_patterns
