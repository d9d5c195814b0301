"""Moved to :mod:`host.client.match` (``host call`` uses it too); kept for existing imports."""

from host.client.match import (
    Like,
    differences,
    json_diff,
    like,
    only_mentioned,
    shown,
)

__all__ = [
    "Like",
    "differences",
    "json_diff",
    "like",
    "only_mentioned",
    "shown",
]
