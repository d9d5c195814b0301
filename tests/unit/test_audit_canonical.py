"""The chain's canonical JSON is RFC 8785's, byte for byte, on its fast path and off it.

:func:`host.store.chain.canonical` encodes with the json module when that gives the same bytes as
rfc8785 and hands the rest to rfc8785; generated values (text across Unicode, lone surrogates
aside, whole and fractional floats of every size, integers around 2**53) must come out the same
as rfc8785 makes them.
"""

from __future__ import annotations

from typing import Any

import rfc8785
from hypothesis import given, settings
from hypothesis import strategies as st

from host.store.chain import canonical

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
