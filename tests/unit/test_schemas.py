"""The compiled schema check never accepts what jsonschema (2020-12) would refuse.

Hypothesis generates schemas from the keywords the compiled check is trusted with, plus some it
is not (which must send every instance to jsonschema), and instances shaped to land near the
schemas' edges (booleans where numbers go, 1.0 for an integer, duplicates, missing and extra
fields). For each pair, :class:`host.machine.schemas.SchemaCheck` must give jsonschema's verdict.
Seeded and bounded, so CI runs the same examples every time.
"""

from __future__ import annotations

from typing import Any

from hypothesis import HealthCheck, given, seed, settings
from hypothesis import strategies as st
from jsonschema import Draft202012Validator

from host.machine.schemas import SchemaCheck

SCALARS = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-3, 3),
    st.sampled_from([0.0, 1.0, 1.5, -2.0, 1e300]),
    st.sampled_from(["", "a", "ab", "abc", "T-1", "ü", "1"]),
)
VALUES = st.recursive(
    SCALARS,
    lambda inner: st.one_of(
        st.lists(inner, max_size=4),
        st.dictionaries(st.sampled_from(["a", "b", "c", "id"]), inner, max_size=4),
    ),
    max_leaves=8,
)
NAMES = st.sampled_from(["a", "b", "c", "id"])
TYPES = st.sampled_from(["string", "integer", "number", "boolean", "null", "object", "array"])


def _leaf() -> st.SearchStrategy[dict[str, Any]]:
    return st.one_of(
        st.builds(lambda t: {"type": t}, TYPES),
        st.builds(lambda t: {"type": t}, st.lists(TYPES, min_size=1, max_size=3, unique=True)),
        st.builds(lambda v: {"enum": v}, st.lists(SCALARS, min_size=1, max_size=4)),
        st.builds(lambda v: {"const": v}, SCALARS),
        st.builds(
            lambda n: {"type": "integer", "minimum": n, "maximum": n + 2}, st.integers(-2, 2)
        ),
        st.builds(lambda n: {"exclusiveMinimum": n, "multipleOf": 0.5}, st.integers(-2, 2)),
        st.builds(
            lambda n: {"type": "string", "minLength": n, "maxLength": n + 1}, st.integers(0, 2)
        ),
        st.sampled_from([{"pattern": "^T-[0-9]+$"}, {"format": "email"}, {"format": "date"}]),
        st.builds(
            lambda n: {"type": "array", "uniqueItems": True, "maxItems": n}, st.integers(0, 3)
        ),
        # Keywords the compiled check is not trusted with: jsonschema alone decides.
        st.sampled_from(
            [
                {"prefixItems": [{"type": "integer"}]},
                {"dependentRequired": {"a": ["b"]}},
                {"unevaluatedProperties": False, "properties": {"a": {}}},
                {"if": {"type": "string"}, "then": {"minLength": 2}},
                {"minContains": 1, "contains": {"type": "string"}},
            ]
        ),
    )


SCHEMAS = st.recursive(
    _leaf(),
    lambda inner: st.one_of(
        st.builds(
            lambda props, required, extra: {
                "type": "object",
                "properties": props,
                "required": required,
                "additionalProperties": extra,
            },
            st.dictionaries(NAMES, inner, max_size=3),
            st.lists(NAMES, max_size=2, unique=True),
            st.one_of(st.booleans(), inner),
        ),
        st.builds(lambda item: {"type": "array", "items": item}, inner),
        st.builds(lambda subs: {"anyOf": subs}, st.lists(inner, min_size=1, max_size=3)),
        st.builds(lambda subs: {"oneOf": subs}, st.lists(inner, min_size=1, max_size=3)),
        st.builds(lambda subs: {"allOf": subs}, st.lists(inner, min_size=1, max_size=3)),
        st.builds(lambda sub: {"not": sub}, inner),
    ),
    max_leaves=6,
)


@seed(20261201)
@settings(max_examples=600, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(schema=SCHEMAS, instances=st.lists(VALUES, min_size=1, max_size=6))
def test_the_verdict_is_always_jsonschemas(schema: dict[str, Any], instances: list[Any]) -> None:
    check = SchemaCheck(schema)
    reference = Draft202012Validator(schema)
    for instance in instances:
        expected = sorted(e.message for e in reference.iter_errors(instance))
        assert sorted(e.message for e in check.errors(instance)) == expected, instance
        assert (check.first_error(instance) is None) == (not expected)


def test_a_schema_outside_the_shared_keywords_is_never_compiled() -> None:
    check = SchemaCheck({"type": "object", "dependentRequired": {"a": ["b"]}})

    assert check.errors({"a": 1}) and not check.errors({"a": 1, "b": 2})
    assert check._fast is None


def test_a_compiled_check_still_names_every_error() -> None:
    check = SchemaCheck(
        {
            "type": "object",
            "properties": {"id": {"type": "string"}, "kind": {"const": "ticket"}},
            "required": ["id", "n"],
        }
    )

    assert check.errors({"id": "T-1", "n": 1}) == []
    assert sorted(e.message for e in check.errors({"id": 3})) == [
        "'n' is a required property",
        "3 is not of type 'string'",
    ]
    assert check._fast is not None
