"""The compiled quick check never passes what jsonschema would refuse (so no diagnostic is lost).

The schema passes skip ``jsonschema`` for a document the quick check passes; these tests attack
that: each keyword against jsonschema on the values where JSON Schema is subtle (true is not 1,
1.0 is an integer, NaN), every spec and fixture (good and broken), hand-picked traps, and seeded
random mutations of real documents and random schemas.
"""

from __future__ import annotations

import copy
import math
from typing import Any

import pytest
from hypothesis import HealthCheck, given, seed, settings
from hypothesis import strategies as st
from jsonschema import Draft7Validator, Draft202012Validator

from host.spec.quick import QuickCheck
from host.spec.rules.io import _quick_meta
from host.spec.schema import flat_schema
from host.spec.yaml import load_paths
from support.paths import ROOT

DOCS = [
    doc.data
    for doc in load_paths(
        [ROOT / "specs", *sorted(p for p in (ROOT / "tests" / "fixtures").rglob("*") if p.is_dir())]
    )[0]
]
SHAPE = Draft7Validator(flat_schema())
SHAPE_QUICK = QuickCheck(flat_schema(), 7)
VALID = [data for data in DOCS if SHAPE.is_valid(data)]
META = Draft202012Validator(Draft202012Validator.META_SCHEMA)
META_QUICK = _quick_meta()


def _agree(quick: QuickCheck, slow: Any, instance: Any) -> None:
    """The quick answer is jsonschema's, or a safe "not sure" (False) where jsonschema passes."""
    valid = not list(slow.iter_errors(instance))
    assert not quick.passes(instance) or valid, instance


VALUES = [None, True, False, 0, 1, 1.0, 1.5, -1, 10**30, math.nan, math.inf, "", "a", "1"]
VALUES += [[], [1], [1, True], [1, 1.0], [0, False], [[1], [True]], {}, {"a": 1}, {"a": True}]
KEYWORD_SCHEMAS = [
    {"type": "integer"},
    {"type": "number"},
    {"type": ["string", "null"]},
    {"type": "boolean"},
    {"type": "object"},
    {"type": "array"},
    {"enum": [1, "a", [1], {"a": 1}]},
    {"enum": [True]},
    {"enum": ["a", "1", ""]},
    {"const": 0},
    {"const": False},
    {"const": [1]},
    {"pattern": "^a$"},
    {"minimum": 1},
    {"exclusiveMinimum": 0},
    {"required": ["a"]},
    {"minProperties": 1},
    {"minItems": 1},
    {"uniqueItems": True},
    {"uniqueItems": False},
    {"propertyNames": {"pattern": "^a"}},
    {"properties": {"a": {"type": "integer"}}},
    {"properties": {"a": {}}, "additionalProperties": False},
    {"additionalProperties": {"type": "string"}},
    {"properties": {"a": {"type": "integer"}}, "additionalProperties": {"type": "string"}},
    {"items": {"type": "integer"}},
    {"allOf": [{"minimum": 0}, {"type": "integer"}]},
    {"anyOf": [{"type": "string"}, {"type": "boolean"}]},
    {"if": {"type": "integer"}, "then": {"minimum": 1}, "else": {"type": "string"}},
    {"if": {"type": "integer"}, "then": {"minimum": 1}},
    {"if": {"type": "integer"}},
    {"$defs": {"n": {"type": "integer"}}, "items": {"$ref": "#/$defs/n"}},
    {"$defs": {"t": {"items": {"$ref": "#/$defs/t"}, "type": "array"}}, "$ref": "#/$defs/t"},
    {"title": "only words", "default": 5, "format": "email"},
]


@pytest.mark.parametrize("schema", KEYWORD_SCHEMAS, ids=range(len(KEYWORD_SCHEMAS)))
def test_each_keyword_answers_as_jsonschema_does(schema: dict[str, Any]) -> None:
    quick = QuickCheck(schema, 2020)
    official = Draft202012Validator(schema)
    for value in VALUES:
        assert quick.passes(value) == official.is_valid(value), value
    if "$ref" not in schema and "$defs" not in schema:
        draft7 = QuickCheck(schema, 7)
        for value in VALUES:
            assert draft7.passes(value) == Draft7Validator(schema).is_valid(value), value


@pytest.mark.parametrize(
    "schema",
    [
        {"maxLength": 3},
        {"patternProperties": {"a": {}}, "additionalProperties": False},
        {"items": [{"type": "string"}]},
        {"prefixItems": [{}], "items": {}},
        {"$ref": "https://example.com/s.json"},
        {"type": "strng"},
        {"definitions": {"a": {}}, "$ref": "#/definitions/a"},
    ],
    ids=str,
)
def test_a_keyword_it_does_not_compile_is_refused_not_ignored(schema: dict[str, Any]) -> None:
    with pytest.raises(ValueError):
        QuickCheck(schema, 7 if "definitions" in schema else 2020)


def test_every_spec_and_fixture_gets_jsonschemas_answer() -> None:
    assert len(DOCS) > 50
    for data in DOCS:
        valid = not list(SHAPE.iter_errors(data))
        assert SHAPE_QUICK.passes(data) == valid, data


TRAPS = [
    {"kind": "tool", "name": "a\n", "steps": [{"act": "h:f"}]},  # Python's $ allows a final \n
    {"kind": "tool", "name": "t", "steps": [{"act": "h:f\n"}]},
    {"kind": "tool", "name": "t", "steps": [{"act": "h:f", "timeout": "5s\n"}]},
    {"kind": "tool", "name": "t", "scopes": ["a\n"], "steps": [{"act": "h:f"}]},
    {"kind": "tool", "name": "t", "steps": [{"read": "٣", "call": "h:f"}, {"act": "h:f"}]},
    {"kind": "tool", "name": "t", "steps": [{"read": "x\ud800", "call": "h:f"}, {"act": "h:f"}]},
    {"kind": "tool", "name": True, "steps": [{"act": "h:f"}]},
    {"kind": "tool", "name": "t", "steps": [{"act": "h:f", "timeout": math.nan}]},
    {"kind": "tool", "name": "t", "steps": [{"act": "h:f", "timeout": 10**40}]},
    {"kind": "server", "elicitation": {"enabled": 1}},
    {"kind": "server", "elicitation": {"enabled": 0}},
    {"kind": "server", "version": 1.0},
    {"kind": "server", "rate": math.inf},
]


@pytest.mark.parametrize("instance", TRAPS, ids=range(len(TRAPS)))
def test_where_the_two_libraries_could_differ_the_quick_check_is_never_laxer(
    instance: Any,
) -> None:
    _agree(SHAPE_QUICK, SHAPE, instance)


META_PLAIN = [
    {},
    True,
    {"type": "object", "properties": {"id": {"type": "string"}}, "required": ["id"]},
    {"$defs": {"a": {"type": "integer"}}, "properties": {"a": {"$ref": "#/$defs/a"}}},
    {"type": "strng"},
    {"properties": {"a": {"minimum": "1"}}},
    {"required": "x"},
    {"items": [1]},
    {"prefixItems": []},
    {"anyOf": []},
    {"enum": 1},
    {"properties": {"a": {"type": ["string", "string"]}}},
    {"dependentRequired": {"a": [1]}},
    {"patternProperties": {"a": {"maxLength": -1}}},
    {"not": 5},
    {"if": {"type": "x"}},
    {"additionalProperties": {"type": "nope"}},
    {"contains": {"minimum": "x"}},
    {"unevaluatedProperties": {"type": 1}},
    {"definitions": {"a": {"type": 1}}},
    {"dependencies": {"a": {"type": 1}}},
    {"dependencies": {"a": ["b", 1]}},
    {"$anchor": "1bad"},
    {"deprecated": "x"},
    {"minContains": -1},
]
# Where the two could differ: the quick check may only be stricter (a "not sure").
META_TRAPS = [
    *META_PLAIN,
    {"$anchor": "ok\n"},
    {"minLength": True},
    {"minLength": 1.5},
    {"minLength": 2.0},
    {"maxItems": 10**40},
    {"pattern": "(unclosed"},
    {"format": 1},
    {"$ref": "https://example.com/elsewhere.json"},
    {"properties": {"a": {"type": "string", "maxLength": math.nan}}},
]


@pytest.mark.parametrize("schema", META_TRAPS, ids=range(len(META_TRAPS)))
def test_schemas_get_the_official_meta_schemas_answer(schema: Any) -> None:
    _agree(META_QUICK, META, schema)
    if schema in META_PLAIN:
        assert META_QUICK.passes(schema) == (not list(META.iter_errors(schema))), schema


SCALARS = (
    st.none()
    | st.booleans()
    | st.integers(-(2**70), 2**70)
    | st.floats()
    | st.sampled_from(["", "x", "a\n", "h:f", "5s", "٣", "\ud800", "tool", "server", "object"])
    | st.text(max_size=12)
)
JSON = st.recursive(
    SCALARS,
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4)
    ),
    max_leaves=12,
)


def _paths(node: Any, here: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    found = [here]
    if isinstance(node, dict):
        for key, value in node.items():
            found += _paths(value, (*here, key))
    elif isinstance(node, list):
        for i, value in enumerate(node):
            found += _paths(value, (*here, i))
    return found


def _mutate(data: Any, path: tuple[Any, ...], value: Any, add: str | None) -> Any:
    data = copy.deepcopy(data)
    if not path:
        return value
    parent = data
    for part in path[:-1]:
        parent = parent[part]
    if add is not None and isinstance(parent[path[-1]], dict):
        parent[path[-1]][add] = value
    else:
        parent[path[-1]] = value
    return data


@seed(20261214)
@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data(), value=JSON, add=st.none() | st.sampled_from(["kind", "type", "x", "when"]))
def test_mutated_documents_never_pass_quick_and_fail_jsonschema(
    data: st.DataObject, value: Any, add: str | None
) -> None:
    doc = data.draw(st.sampled_from(VALID))
    path = data.draw(st.sampled_from(_paths(doc)))
    _agree(SHAPE_QUICK, SHAPE, _mutate(doc, path, value, add))


KEYWORDS = st.sampled_from(
    [
        *("type", "properties", "items", "required", "enum", "const", "minimum", "maxLength"),
        *("pattern", "format", "$ref", "$defs", "anyOf", "allOf", "not", "if", "then"),
        *("additionalProperties", "prefixItems", "dependentRequired", "$anchor", "x-mcp-header"),
    ]
)
SCHEMA = st.recursive(
    st.booleans() | st.dictionaries(KEYWORDS, SCALARS, max_size=3),
    lambda inner: st.dictionaries(
        KEYWORDS, inner | st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=4), inner)
    ),
    max_leaves=10,
)


@seed(20261215)
@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(schema=SCHEMA)
def test_random_schemas_never_pass_quick_and_fail_the_meta_schema(schema: Any) -> None:
    _agree(META_QUICK, META, schema)
