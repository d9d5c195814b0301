"""The spec language's JSON Schema: shipped, current, draft-07, and in step with the validator."""

from __future__ import annotations

import json
import re

from jsonschema import Draft7Validator

from host.spec.rulebook import RULES
from host.spec.schema import SCHEMA_PATH, build_schema, render
from host.spec.vocabulary import FORM_COMMON, FORM_KEYWORDS
from host.spec.yaml import load_paths
from support.paths import ROOT


def test_shipped_schema_is_current() -> None:
    # Stale? Regenerate with: host schema -o host/spec/schema.json
    assert SCHEMA_PATH.read_text(encoding="utf-8") == render()


def test_schema_is_valid_draft_07() -> None:
    schema = json.loads(SCHEMA_PATH.read_text())
    assert schema["$schema"] == "http://json-schema.org/draft-07/schema#"
    Draft7Validator.check_schema(schema)


def test_every_valid_spec_document_passes_the_schema() -> None:
    validator = Draft7Validator(build_schema())
    docs, problems = load_paths([ROOT / "specs", ROOT / "tests" / "fixtures" / "good"])
    assert problems == [] and len(docs) == 13
    for doc in docs:
        assert list(validator.iter_errors(doc.data)) == [], doc.file


def test_every_spec_file_points_editors_at_the_schema() -> None:
    for path in sorted((ROOT / "specs").glob("*.yaml")):
        first = path.read_text().splitlines()[0]
        assert first == "# yaml-language-server: $schema=../host/spec/schema.json", path


def test_form_keywords_match_the_schema() -> None:
    field = build_schema()["definitions"]["formField"]["properties"]
    assert set(field) == FORM_COMMON.union(*FORM_KEYWORDS.values())


def test_the_readme_rules_table_is_the_validators() -> None:
    """Each rule is a row of docs/rules.md's table, with the validator's own severity and words."""
    text = (ROOT / "docs" / "rules.md").read_text()
    start = text.index("| rule | severity | what it means | how to fix it |")
    table = text[start : text.index("\n\n", start)].splitlines()[2:]
    rows = [
        [c.strip().replace("\\|", "|") for c in re.split(r"(?<!\\)\|", row)[1:-1]] for row in table
    ]
    assert rows == [[f"`{r.id}`", r.severity, r.summary, r.fix] for r in RULES.values()]
