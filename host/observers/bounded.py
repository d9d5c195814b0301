"""Bounded audit values: a value too large to keep whole is kept as its digest, size and prefix.

A caller must not grow the store by sending large arguments: each record's arguments, and each
answer's content, are kept whole up to ``HOST_RECORD_MAX`` bytes of JSON; a larger one is kept as
``{"bounded": {"sha256", "bytes", "prefix"}}``, which still tells a review what was sent (the
digest matches the client's copy) at a fixed cost.
"""

from __future__ import annotations

import hashlib
from typing import Any

from host.jsonvalues import encoder

__all__ = ["BOUNDED", "PREFIX_BYTES", "bounded"]

_COMPACT = encoder(compact=True, default=str)

#: The key of a bounded value's stand-in.
BOUNDED = "bounded"
#: How many bytes of a bounded value's JSON its stand-in keeps.
PREFIX_BYTES = 256


def bounded(value: Any, most: int) -> Any:
    """``value``, or its stand-in when its JSON takes more than ``most`` bytes (UTF-8)."""
    data_text = _COMPACT(value)
    data = data_text.encode()
    if len(data) <= most:
        return value
    return {
        BOUNDED: {
            "sha256": hashlib.sha256(data).hexdigest(),
            "bytes": len(data),
            # NOTE: cut on a byte count, so a character split at the end is dropped, not mangled.
            "prefix": data[:PREFIX_BYTES].decode(errors="ignore"),
        }
    }
