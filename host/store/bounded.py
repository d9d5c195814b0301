"""Bounded values: a value too large to keep whole is kept as its digest, size and prefix.

A caller must not grow the store by sending large arguments: each audit record's and each
approval request's arguments, and each answer's content, are kept whole up to ``HOST_RECORD_MAX``
bytes of JSON; a larger one is kept as ``{"bounded": {"sha256", "bytes", "prefix"}}``, which
still tells a review what was sent (the digest matches the client's copy) at a fixed cost.
:func:`bounded_fields` keeps a mapping's small fields whole and bounds only the large ones, so an
approver still reads the short arguments beside a cut one.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from typing import Any

from host.jsonvalues import encoder

__all__ = [
    "BOUNDED",
    "MESSAGE_CHARS",
    "PREFIX_BYTES",
    "bounded",
    "bounded_fields",
    "bounded_text",
    "is_bounded",
]

_COMPACT = encoder(compact=True, default=str)

#: The key of a bounded value's stand-in.
BOUNDED = "bounded"
#: How many bytes of a bounded value's JSON its stand-in keeps.
PREFIX_BYTES = 256


def bounded(value: Any, most: int) -> Any:
    """``value``, or its stand-in when its JSON takes more than ``most`` bytes (UTF-8)."""
    if _surely_within(value, most):
        return value
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


#: The most characters of a rendered message (an approve step's) kept for people to read.
MESSAGE_CHARS = 2000


def bounded_text(text: str, most: int = MESSAGE_CHARS) -> str:
    """``text``, or its first ``most`` characters and a note of how long it was."""
    if len(text) <= most:
        return text
    return f"{text[:most]}… (cut: {len(text):,} characters in all)"


def is_bounded(value: Any) -> bool:
    """Whether ``value`` is the stand-in :func:`bounded` keeps of a value too large."""
    return isinstance(value, dict) and len(value) == 1 and isinstance(value.get(BOUNDED), dict)


def bounded_fields(values: Mapping[str, Any], most: int) -> dict[str, Any]:
    """``values`` whole if its JSON fits ``most`` bytes; else each field over its share of
    ``most`` bounded (a short field stays whole), and the whole bounded if that is still over."""
    kept = dict(values)
    if _surely_within(kept, most) or len(_COMPACT(kept).encode()) <= most:
        return kept
    share = max(PREFIX_BYTES * 2, most // max(1, len(kept)))
    kept = {key: bounded(value, share) for key, value in kept.items()}
    if len(_COMPACT(kept).encode()) <= most:
        return kept
    whole: dict[str, Any] = bounded(dict(values), most)
    return whole


#: The most UTF-8 bytes one character of a JSON string can take (an escape: ``\\u001f``).
_WIDEST = 6
#: Bytes a number, true, false or null takes at most, and the punctuation around one member.
_SCALAR, _MEMBER = 32, 8
#: Integers from this size up are encoded to be measured (their digits could pass _SCALAR).
_LONGEST = 10**30


def _surely_within(value: Any, most: int) -> bool:
    """Whether ``value``'s JSON is sure to take at most ``most`` bytes, without encoding it.

    NOTE: most arguments and answers are a few short fields; an upper bound on their JSON's size
    (every character at its widest, every number at its longest) says so at a fraction of the
    cost of encoding them. Nested or unusual values are encoded, as before.
    """
    if not isinstance(value, dict) or len(value) > most // (_SCALAR + _MEMBER):
        return False
    size = 2
    for key, item in value.items():
        if isinstance(item, str):
            size += _WIDEST * len(item)
        elif isinstance(item, int) and not -_LONGEST < item < _LONGEST:
            return False  # NOTE: a long integer's digits (I-JSON allows some 300)
        elif not (item is None or isinstance(item, bool | int | float)):
            return False
        size += _WIDEST * len(key) + _SCALAR + _MEMBER
    return size <= most
