"""The schema's building blocks: a described text, name, handler, duration, scope list, result.

Each step and document of :mod:`host.spec.schema` is made of these, so a duration or a scope list
is written (and described to editors) the same way wherever the spec language takes one.
"""

from __future__ import annotations

from typing import Any

from host.spec.durations import DURATION_PATTERN
from host.spec.vocabulary import HANDLER, IDENTIFIER, SCOPE

__all__ = ["RESULT", "WHEN", "duration", "handler", "identifier", "scopes", "text"]


def text(description: str) -> dict[str, Any]:
    """A string, described."""
    return {"type": "string", "description": description}


def identifier(description: str) -> dict[str, Any]:
    """A name a template can use (letters, digits and ``_``), described."""
    return {"type": "string", "pattern": IDENTIFIER, "description": description}


def handler(description: str) -> dict[str, Any]:
    """A handler as ``module:function``, described."""
    return {"type": "string", "pattern": HANDLER, "description": description}


def duration(description: str) -> dict[str, Any]:
    """A duration like ``30s``, described with the units it takes."""
    return {
        "type": "string",
        "pattern": DURATION_PATTERN,
        "description": f"{description} A number and a unit: 500ms, 30s, 10m, 8h, 7d.",
    }


def scopes(description: str) -> dict[str, Any]:
    """A list of scope tokens, described with how they nest."""
    return {
        "type": "array",
        "uniqueItems": True,
        "items": {"type": "string", "pattern": SCOPE},
        "description": (
            f"{description} Hierarchical on ':': a token with `tickets` holds `tickets:read`."
        ),
    }


RESULT = {
    "type": ["object", "string"],
    "description": "The tool's result then: a mapping (strings inside are templates) or a text.",
}
WHEN = text("A bare Jinja expression; ask only when it is true, e.g. `agent is undefined`.")
