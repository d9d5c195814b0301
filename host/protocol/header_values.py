"""How a header carries a value that mirrors the request body (SEP-2243).

Values that a header cannot carry as they are (non-ASCII, edge spaces, control characters) travel
as ``=?base64?<Base64 of the UTF-8>?=``. Both eras read ``MCP-Protocol-Version`` this way: the
modern one checks it and the other routing headers against the body
(:mod:`host.protocol.modern.envelope`, :mod:`host.protocol.modern.headers`), a legacy session
refuses a version it does not know.
"""

from __future__ import annotations

import base64
import binascii
import re
from functools import lru_cache

__all__ = ["decode_header_value"]

_SENTINEL = re.compile(r"=\?base64\?(?P<payload>.*)\?=", re.DOTALL)
# RFC 9110 section 5.5: a field value is visible ASCII, spaces and tabs.
_FIELD_VALUE = re.compile(r"[\t\x20-\x7e]*")


@lru_cache(maxsize=256)
def decode_header_value(value: str | None) -> str | None:
    """A header's value as sent, or decoded from ``=?base64?...?=``; None when it is not valid.

    Surrounding spaces are not part of a value (RFC 9110). A value that is shaped like the
    ``=?base64?...?=`` sentinel is always encoded (clients must encode a literal value of that
    shape too), so a sentinel with bad Base64 (wrong padding, characters outside the alphabet,
    a non-canonical ending) or bytes that are not UTF-8 is invalid, as is a plain value with a
    character a header cannot hold.

    NOTE: each distinct value is decoded once (clients send the same version, method and tool
    names on every request): two regex matches cost some 5k instructions a header.
    """
    if value is None:
        return None
    value = value.strip(" \t")
    match = _SENTINEL.fullmatch(value)
    if match is None:
        return value if _FIELD_VALUE.fullmatch(value) else None
    payload = match["payload"]
    try:
        raw = base64.b64decode(payload, validate=True)
    except binascii.Error:
        return None
    if base64.b64encode(raw).decode("ascii") != payload:
        return None
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError:
        return None
