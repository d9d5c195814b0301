"""Translate at the edge: modern tools, forms, answers and results for an older revision.

The machine and the core speak the modern revision only. A legacy session gets what its
revision knows, from the facts in :mod:`host.protocol.revisions`:

* tools without the members the revision does not know (``title``, ``outputSchema``, ``icons``...);
* forms without titled or multi-select enums and defaults on non-booleans: titled options become
  ``enum`` + ``enumNames``, and a multi-select becomes a comma-separated text that
  :func:`answer` splits back into a list;
* results without ``structuredContent`` where the revision has none, and content blocks
  rewritten: no ``icons`` on links where it knows none; where blocks have no ``_meta``, no
  ``lastModified`` in annotations either, and a ``resource_link`` becomes a text block naming
  the link.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from host.machine import Outcome, Question
from host.protocol.revisions import Revision

__all__ = ["answer", "blocks", "elicitation", "form", "result", "tool"]


def tool(described: Mapping[str, Any], revision: Revision) -> dict[str, Any]:
    """A ``Tool`` object without the members ``revision`` does not know."""
    dropped = revision.unknown_tool_members
    return {k: v for k, v in described.items() if k not in dropped}


def elicitation(question: Question, revision: Revision) -> dict[str, Any]:
    """A question's ``elicitation/create`` params, in what ``revision`` knows.

    A URL ask is ``{mode: url, message, url}``; the legacy revision that has URL mode adds the
    ``elicitationId`` its completion notification names.
    """
    if question.on_page:
        asked = question.params()
        if not revision.modern:
            asked["elicitationId"] = question.handle
        return asked
    params: dict[str, Any] = {
        "message": question.message,
        "requestedSchema": form(question.schema, revision),
    }
    if revision.form_mode:
        params = {"mode": "form", **params}
    return params


def form(schema: Mapping[str, Any], revision: Revision) -> dict[str, Any]:
    """A ``requestedSchema`` as a client of ``revision`` understands it."""
    if revision.rich_forms:
        return dict(schema)
    properties: dict[str, Any] = {}
    for name, prop in schema["properties"].items():
        prop = dict(prop)
        if "oneOf" in prop:
            options = prop.pop("oneOf")
            prop["enum"] = [o["const"] for o in options]
            prop["enumNames"] = [o.get("title", o["const"]) for o in options]
        if prop.get("type") == "array":
            prop = _as_text(prop)
        if prop.get("type") != "boolean":
            prop.pop("default", None)
        properties[name] = prop
    return {**schema, "properties": properties}


def _as_text(prop: Mapping[str, Any]) -> dict[str, Any]:
    """A multi-select field as a comma-separated text field that says its choices."""
    items = prop.get("items", {})
    choices = items.get("enum") or [o["const"] for o in items.get("anyOf", [])]
    listed = ", ".join(json.dumps(c) for c in choices)
    description = (prop.get("description", "") + f" (comma-separated: {listed})").strip()
    return {"type": "string", "description": description}


def answer(schema: Mapping[str, Any], content: Mapping[str, Any]) -> dict[str, Any]:
    """A legacy answer in the modern shape: multi-select texts split back into lists.

    NOTE: harmless for a modern answer (its multi-selects already are lists), so callers need
    not know which revision the answer came from.
    """
    upgraded = dict(content)
    for name, prop in schema["properties"].items():
        value = upgraded.get(name)
        if prop.get("type") == "array" and isinstance(value, str):
            upgraded[name] = [part.strip() for part in value.split(",") if part.strip()]
    return upgraded


def result(outcome: Outcome, revision: Revision) -> dict[str, Any]:
    """A ``CallToolResult`` in what ``revision`` knows (modern: exactly the outcome's)."""
    body = outcome.to_result()
    if revision.modern:
        return body
    if not revision.structured:
        body.pop("structuredContent", None)
    body["content"] = blocks(body["content"], revision)
    return body


def blocks(content: list[dict[str, Any]], revision: Revision) -> list[dict[str, Any]]:
    """Content blocks as a client of ``revision`` can receive them (see the module doc)."""
    if revision.link_icons and revision.block_meta:
        return content
    return [_block(block, revision) for block in content]


def _block(block: dict[str, Any], revision: Revision) -> dict[str, Any]:
    if block.get("type") == "resource_link":
        if not revision.block_meta:
            block = _link_as_text(block)
        elif not revision.link_icons:
            block = {k: v for k, v in block.items() if k != "icons"}
    if revision.block_meta:
        return block
    block = {k: v for k, v in block.items() if k != "_meta"}
    resource = block.get("resource")
    if isinstance(resource, Mapping) and "_meta" in resource:
        block["resource"] = {k: v for k, v in resource.items() if k != "_meta"}
    annotations = block.get("annotations")
    if isinstance(annotations, Mapping) and "lastModified" in annotations:
        kept = {k: v for k, v in annotations.items() if k != "lastModified"}
        if kept:
            block["annotations"] = kept
        else:
            del block["annotations"]
    return block


def _link_as_text(block: Mapping[str, Any]) -> dict[str, Any]:
    label = block.get("title") or block.get("name")
    text = f"{label}: {block.get('uri')}"
    if block.get("mimeType"):
        text += f" ({block['mimeType']})"
    if block.get("description"):
        text += f"\n{block['description']}"
    kept = {k: block[k] for k in ("annotations",) if k in block}
    return {"type": "text", "text": text, **kept}
