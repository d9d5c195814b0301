"""Scopes: their syntax, what a token holds, and which needed ones it lacks.

Scopes are hierarchical on ``:``: holding ``tickets`` satisfies ``tickets:read`` and
``tickets:write:bulk``; holding ``tickets:read`` does not satisfy ``tickets`` nor
``tickets:write``. MCP requires servers to account for such hierarchies (Authorization, "Scope
Challenge Handling").
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from typing import Any

__all__ = ["check_scope", "missing_scopes", "scopes_from_claims", "split_scopes"]

# NOTE: RFC 6749 section 3.3's scope-token (printable ASCII but space, '"' and '\'), so every
# scope can stand unescaped inside the quoted ``scope="..."`` of a challenge.
_SCOPE = re.compile(r"[\x21\x23-\x5b\x5d-\x7e]+")


def check_scope(scope: str) -> str | None:
    """Why ``scope`` is not a valid scope name, or None when it is."""
    if not scope:
        return "a scope cannot be empty"
    if not _SCOPE.fullmatch(scope):
        return (
            f"{scope!r} is not a valid scope: use printable ASCII without spaces, quotes or "
            "backslashes (RFC 6749 section 3.3)"
        )
    if scope.startswith(":") or scope.endswith(":") or "::" in scope:
        return f"{scope!r} is not a valid scope: each ':'-separated part must be non-empty"
    return None


def split_scopes(text: str) -> list[str]:
    """The scopes in a comma- or space-separated list, in order, without repeats or blanks."""
    seen: dict[str, None] = {}
    for part in re.split(r"[,\s]+", text):
        if part:
            seen.setdefault(part, None)
    return list(seen)


def _satisfies(held: str, needed: str) -> bool:
    return held == needed or needed.startswith(held + ":")


def missing_scopes(held: Iterable[str], needed: Iterable[str]) -> list[str]:
    """The scopes in ``needed`` that nothing in ``held`` satisfies, in ``needed``'s order.

    Args:
        held: The caller's scopes.
        needed: The scopes the operation needs (duplicates are reported once).

    Returns:
        An empty list when the caller may go ahead.
    """
    have = [scope for scope in held if scope]
    missing: dict[str, None] = {}
    for scope in needed:
        if scope not in missing and not any(_satisfies(h, scope) for h in have):
            missing[scope] = None
    return list(missing)


def scopes_from_claims(claims: Mapping[str, Any]) -> frozenset[str]:
    """The scopes a token's claims grant: ``scope`` (space-separated) and ``scp``.

    ``scp`` is a list in some identity providers and a space-separated string in others; both are
    read. A value of any other type grants nothing (a malformed claim must not widen access).
    """
    found: set[str] = set()
    for name in ("scope", "scp"):
        value = claims.get(name)
        if isinstance(value, str):
            found.update(value.split())
        elif isinstance(value, list):
            found.update(item for item in value if isinstance(item, str) and item)
    return frozenset(found)
