"""Values as strict JSON holds them, for what the host writes out of what handlers returned.

Bodies that come in are I-JSON already (:mod:`host.protocol.ijson`). What goes out comes from the
user's handlers and templates, which may return what JSON has no form for: a datetime, a Decimal,
``float("nan")``, a lone surrogate. The audit trail keeps such values, and a call's result is made
of them, the same way: every encoder after that point (the reply, the act's record, the stream,
the audit row) then takes the value as it is.

A call's structured result is encoded once, for its text block (MCP sends both): it travels as
:class:`Encoded`, and :func:`dumps`, which every reply, event and stdio line is written with, puts
that text in place of encoding the value again.
"""

from __future__ import annotations

import json
import math
import os
import re
import threading
from collections.abc import Callable, Iterable, Mapping
from json import encoder as _json_encoder
from typing import Any

__all__ = ["Encoded", "dumps", "encoded", "encoder", "foreign", "storable"]

_SURROGATE = re.compile("[\ud800-\udfff]")


class Encoded(dict[str, Any]):
    """A JSON object (a tool's structured result) that holds its own JSON text.

    Args:
        value: The object.
        text: ``value``'s JSON, already made (the result's text block); nothing may change
            ``value`` after, or the reply would carry the old text.
    """

    __slots__ = ("text",)

    def __init__(self, value: Mapping[str, Any], text: str) -> None:
        super().__init__(value)
        self.text = text


def encoder(
    *,
    sort_keys: bool = False,
    compact: bool = False,
    ensure_ascii: bool = False,
    allow_nan: bool = True,
    default: Callable[[Any], Any] | None = None,
) -> Callable[[Any], str]:
    """``json.dumps`` with these options, its C encoder made once rather than on every call.

    NOTE: for the values the host encodes on every call (replies, log lines, digests, seals,
    records), where making the encoder is a third of a small value's time. It skips the check
    for a value that contains itself (it would fail as a RecursionError, not a ValueError), so
    it is only for values that are JSON already: parsed, built by the host, or a handler's value
    once :func:`host.machine.types.Outcome.from_value` has encoded it.
    """
    separators = (",", ":") if compact else (", ", ": ")
    # NOTE: not in the json module's typed surface; present in every CPython build with _json.
    make: Callable[..., Callable[[Any, int], list[str]]] | None = getattr(
        _json_encoder, "c_make_encoder", None
    )
    if make is None:  # NOTE: a Python built without its _json accelerator
        slow = json.JSONEncoder(
            sort_keys=sort_keys, separators=separators, ensure_ascii=ensure_ascii,
            allow_nan=allow_nan, default=default, check_circular=False,
        )  # fmt: skip
        return slow.encode
    strings = (
        _json_encoder.encode_basestring_ascii if ensure_ascii else _json_encoder.encode_basestring
    )
    fast = make(
        None, default or _unencodable, strings, None, separators[1], separators[0],
        sort_keys, False, allow_nan,
    )  # fmt: skip
    join = "".join

    def encode(value: Any) -> str:
        return join(fast(value, 0))

    return encode


def _unencodable(value: Any) -> Any:
    raise TypeError(f"Object of type {type(value).__name__} is not JSON serializable")


def dumps(message: Mapping[str, Any], *, compact: bool = False, allow_nan: bool = True) -> str:
    """A JSON-RPC message as JSON text (``ensure_ascii`` off), its result's :class:`Encoded`
    structured content (and, not compact, its :class:`Encoded` ``_meta``) written from their
    text rather than encoded again.

    Args:
        message: The message.
        compact: Without spaces after separators (the text spliced in keeps its own).
        allow_nan: Whether NaN and the infinities may be written (as JavaScript names).
    """
    encode = _MESSAGES[compact][allow_nan]
    result = message.get("result")
    if not isinstance(result, dict):
        return encode(message)
    content = result.get("structuredContent")
    meta = None if compact else result.get("_meta")
    content_text = content.text if isinstance(content, Encoded) else None
    meta_text = meta.text if isinstance(meta, Encoded) else None
    if content_text is not None or meta_text is not None:
        result = {**result}
        if content_text is not None:
            result["structuredContent"] = _CONTENT
        if meta_text is not None:
            result["_meta"] = _META
    head = _head(message, compact)
    text = encode({**message, "result": result}) if head is None else encode(result)
    # NOTE: looked for from the end: each follows the text block, the largest part; _meta
    # (this host's own text) first, so no text a handler wrote is searched for ours.
    if meta_text is not None:
        at = text.rindex(_META_JSON)
        text = text[:at] + meta_text + text[at + len(_META_JSON) :]
    if content_text is not None:
        at = text.rindex(_CONTENT_JSON)
        text = text[:at] + content_text + text[at + len(_CONTENT_JSON) :]
    return text if head is None else head + text + "}"


def _head(message: Mapping[str, Any], compact: bool) -> str | None:
    """A success response's text up to its result (as the encoder writes it); None for any
    other message.

    NOTE: the envelope written from text made once: the C encoder spends some 2k instructions
    on each member of an object.
    """
    if tuple(message) != _RESPONSE or message["jsonrpc"] != "2.0":
        return None
    request_id = message["id"]
    if request_id.__class__ is int:
        shown = int.__repr__(request_id)
    elif request_id.__class__ is str:
        shown = _json_encoder.encode_basestring(request_id)
    else:
        return None
    before, between = _HEADS[compact]
    return before + shown + between


def encoded(value: Mapping[str, Any]) -> Encoded:
    """``value`` holding its own text, as :func:`dumps` writes it (not compact): for the parts
    of replies that never change, encoded once."""
    return Encoded(value, _MESSAGES[False][True](value))


#: A success response's keys, in the order :func:`host.protocol.jsonrpc.success` writes them,
#: and its text around the id, by ``compact``.
_RESPONSE = ("jsonrpc", "id", "result")
_HEADS = (('{"jsonrpc": "2.0", "id": ', ', "result": '), ('{"jsonrpc":"2.0","id":', ',"result":'))
# NOTE: random per process, so no string a handler returns can stand for one; short and plain,
# as the encoder writes a string a character at a time (escapes dearer).
_CONTENT = os.urandom(12).hex()
_CONTENT_JSON = json.dumps(_CONTENT)
_META = os.urandom(12).hex()
_META_JSON = json.dumps(_META)


#: The encoders of :func:`dumps`, by ``compact`` then ``allow_nan``.
#: NOTE: indexed by the two bools, not keyed by their tuple: no tuple made and hashed per reply.
_MESSAGES = tuple(
    tuple(encoder(compact=compact, allow_nan=nan) for nan in (False, True))
    for compact in (False, True)
)


class _Foreign(threading.local):
    """One thread's encoders of :func:`foreign`: made once per thread, not once per value.

    NOTE: each keeps the dict of objects being encoded (the check for a value that contains
    itself) that ``json.dumps`` makes anew per call; the C encoder leaves it uncleared when it
    raises, so :func:`foreign` clears it then. Per thread, as two encodings at once must not
    share it.
    """

    def __init__(self) -> None:
        self.markers: dict[int, Any] = {}
        self.converted = False
        self.encoders = {nan: self._encoder(nan) for nan in (False, True)}

    def _encoder(self, allow_nan: bool) -> Callable[[Any, int], Iterable[str]]:
        make: Callable[..., Callable[[Any, int], list[str]]] | None = getattr(
            _json_encoder, "c_make_encoder", None
        )
        if make is None:  # NOTE: a Python built without its _json accelerator
            slow = json.JSONEncoder(ensure_ascii=False, allow_nan=allow_nan, default=self._as_text)
            return lambda value, _level: slow.iterencode(value)
        return make(
            self.markers, self._as_text, _json_encoder.encode_basestring, None, ": ", ", ",
            False, False, allow_nan,
        )  # fmt: skip

    def _as_text(self, item: object) -> str:
        self.converted = True
        return str(item)


_FOREIGN = _Foreign()


def foreign(value: Any, *, allow_nan: bool) -> tuple[str, bool]:
    """A handler's value as ``json.dumps(value, ensure_ascii=False, default=str,
    allow_nan=allow_nan)`` writes it, and whether any part of it JSON has no type for was
    written as its ``str()``.

    Raises:
        ValueError: as ``json.dumps``: ``value`` contains itself, or (unless ``allow_nan``) a
            number that is not finite.
    """
    state = _FOREIGN
    state.converted = False
    try:
        text = "".join(state.encoders[allow_nan](value, 0))
    except BaseException:
        state.markers.clear()
        raise
    return text, state.converted


def storable(value: Any) -> Any:
    """``value`` as strict JSON holds it: non-finite numbers by name, lone surrogates U+FFFD.

    Other values JSON has no type for are left as they are (the encoders write them as ``str``).
    """
    if isinstance(value, str):
        return _SURROGATE.sub("\ufffd", value)
    if isinstance(value, float) and not math.isfinite(value):
        return str(value)
    if isinstance(value, Mapping):
        return {storable(k): storable(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [storable(item) for item in value]
    return value
