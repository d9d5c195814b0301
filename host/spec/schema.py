"""The spec language as one JSON Schema (draft-07), built here and shipped as ``schema.json``.

The same dict is the validator's first pass and what editors load through
``# yaml-language-server: $schema=...``, so the two can never disagree. ``host schema`` prints it;
a test fails when the shipped file is stale (``host schema -o host/spec/schema.json`` rewrites it).
Its definitions are built by job: the documents in :mod:`host.spec.schema_documents`, the steps
and form fields in :mod:`host.spec.schema_steps`, from the words of :mod:`host.spec.vocabulary`.
"""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path
from typing import Any

from host.spec.schema_documents import example, server, tool
from host.spec.schema_steps import form_field, steps

__all__ = ["SCHEMA_PATH", "build_schema", "flat_schema", "render", "schema"]

SCHEMA_PATH = Path(__file__).with_name("schema.json")


def build_schema() -> dict[str, Any]:
    """The spec language's JSON Schema as a dict."""
    return {
        "$schema": "http://json-schema.org/draft-07/schema#",
        "title": "host spec (v1)",
        "description": "One document of a host spec directory: `kind: server` or `kind: tool`.",
        "type": "object",
        "required": ["kind"],
        "properties": {"kind": {"enum": ["server", "tool"]}},
        "allOf": [
            {
                "if": {"required": ["kind"], "properties": {"kind": {"const": kind}}},
                "then": {"$ref": f"#/definitions/{kind}"},
            }
            for kind in ("server", "tool")
        ],
        "definitions": {
            "server": server(),
            "tool": tool(),
            "step": steps(),
            "formField": form_field(),
            "example": example(),
        },
    }


def render() -> str:
    """The schema as the text of ``schema.json``."""
    return json.dumps(build_schema(), indent=2) + "\n"


@cache
def schema() -> dict[str, Any]:
    """The schema (built once per process)."""
    return build_schema()


@cache
def flat_schema() -> dict[str, Any]:
    """The schema with every ``$ref`` replaced by its target: the same rules, checked faster."""
    definitions = schema()["definitions"]

    def inline(node: Any) -> Any:
        if isinstance(node, dict):
            ref = node.get("$ref")
            if isinstance(ref, str) and ref.startswith("#/definitions/"):
                return inline(definitions[ref.removeprefix("#/definitions/")])
            return {k: inline(v) for k, v in node.items() if k != "definitions"}
        if isinstance(node, list):
            return [inline(item) for item in node]
        return node

    flat: dict[str, Any] = inline(schema())
    return flat
