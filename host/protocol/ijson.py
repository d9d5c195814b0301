"""Strict JSON for request bodies: I-JSON (RFC 7493), one meaning per document.

Python's parser accepts more than JSON allows, and more than other parsers agree on: ``NaN`` and
``Infinity``, numbers no double can hold (``1e999`` reads as infinity), lone UTF-16 surrogates
(``"\\ud800"``, which no UTF-8 encoder will write back out), and keys that repeat. Each of these
let a body through that later failed to seal, to store or to print. :func:`loads` refuses them
all, saying what and where (a JSON Pointer, RFC 6901), so nothing malformed reaches a handler.
"""

from __future__ import annotations

import json
import re
import sys
import threading
from collections.abc import Callable, Iterator
from typing import Any

__all__ = ["StrictJsonError", "loads"]

# Text that can only come out as a surrogate: an escape \uD800..\uDFFF, or one decoded raw
# (json.loads decodes bytes with "surrogatepass", in UTF-16 and -32 too). Bodies without
# either skip the walk.
_ESCAPED_SURROGATE = re.compile("\\\\u[dD][89abcdefABCDEF]")
_SURROGATE = re.compile("[\ud800-\udfff]")


class StrictJsonError(ValueError):
    """A body that is JSON to Python but not I-JSON.

    Attributes:
        problem: What is wrong, for the client's error message.
        data: Machine-readable details: ``path`` (a JSON Pointer) and what was found.
    """

    def __init__(self, problem: str, data: dict[str, str]) -> None:
        super().__init__(problem)
        self.problem = problem
        self.data = data


class _Bad:
    """Stands in for a value the parser read but I-JSON forbids, until its path is known."""

    def __init__(self, literal: str, what: str) -> None:
        self.literal = literal
        self.what = what


def loads(body: bytes | str) -> Any:
    """The JSON value in ``body``, parsed as I-JSON.

    Raises:
        StrictJsonError: A repeated key, ``NaN``/``Infinity``, a number outside the double range
            or a lone surrogate; its message names it and its path.
        ValueError: The body is not JSON at all (UnicodeDecodeError included).
        RecursionError: It nests too deeply.
    """
    found: list[_Bad] = []
    _local.found = found
    text = _text(body)
    value = _decode(text)
    if found or _maybe_surrogate(text):
        for path, problem in _problems(value, ""):
            raise StrictJsonError(
                f"Parse error: {problem} at {_pointer(path)}; request bodies must be I-JSON "
                "(RFC 7493)",
                {"path": _pointer(path), "problem": problem},
            )
    return value


def _maybe_surrogate(text: str) -> bool:
    """Whether ``text`` may hold a lone surrogate, escaped or raw.

    NOTE: ``str.isascii`` reads a flag, and a one-character ``in`` is ``memchr``; a regex
    search costs some 60 instructions a character (20k for a 300-byte body), so the common body
    (ASCII, no backslash) is told apart without one.
    """
    if text.isascii():
        return "\\" in text and _ESCAPED_SURROGATE.search(text) is not None
    return _SURROGATE.search(text) is not None or _ESCAPED_SURROGATE.search(text) is not None


def _text(body: bytes | str) -> str:
    """``body`` as text, read as :func:`json.loads` reads it (UTF-8, -16 or -32; a BOM)."""
    if isinstance(body, str):
        if body.startswith("\ufeff"):
            raise json.JSONDecodeError("Unexpected UTF-8 BOM (decode using utf-8-sig)", body, 0)
        return body
    # NOTE: an object whose second byte is not NUL is UTF-8 to json.detect_encoding (no BOM
    # starts with "{"): every request body, told without a call.
    if body[:1] == b"{" and body[1:2] != b"\x00":
        return body.decode("utf-8", "surrogatepass")
    return body.decode(json.detect_encoding(body), "surrogatepass")


def _decode(text: str) -> Any:
    """The one JSON value ``text`` holds, as :meth:`json.JSONDecoder.decode` reads it.

    NOTE: the decoder's C scanner called directly, its two Python wrappers (``decode`` and
    ``raw_decode``) written out here with their very errors.
    """
    # NOTE: the whitespace pattern is matched only where whitespace is: a match costs more
    # than the rest of this function.
    start = _space(text, 0).end() if text[:1].isspace() else 0
    try:
        value, end = _scan(text, start)
    except StopIteration as err:
        raise json.JSONDecodeError("Expecting value", text, err.value) from None
    if end != len(text):
        end = _space(text, end).end()
        if end != len(text):
            raise json.JSONDecodeError("Extra data", text, end)
    return value


def _found(bad: _Bad) -> _Bad:
    _local.found.append(bad)
    return bad


def _float(text: str) -> float | _Bad:
    number = float(text)
    if number in (float("inf"), float("-inf")):
        return _found(_Bad(text, "is outside the range of a double"))
    return number


def _int(text: str) -> int | _Bad:
    number = int(text)
    if abs(number) > sys.float_info.max:
        return _found(_Bad(_short(text), "is outside the range of a double"))
    return number


def _problems(value: Any, path: str) -> Iterator[tuple[str, str]]:
    """Each forbidden value under ``value``, with its path, depth first."""
    if isinstance(value, _Bad):
        yield path, f"{value.literal} {value.what}"
    elif isinstance(value, str):
        if _SURROGATE.search(value):
            yield path, "a string holds a lone surrogate (\\ud800-\\udfff, not valid Unicode)"
    elif isinstance(value, dict):
        for key, item in value.items():
            step = f"{path}/{_escape(key)}"
            if _SURROGATE.search(key):
                yield step, "a key holds a lone surrogate (\\ud800-\\udfff, not valid Unicode)"
            yield from _problems(item, step)
    elif isinstance(value, list):
        for index, item in enumerate(value):
            yield from _problems(item, f"{path}/{index}")


def _escape(key: str) -> str:
    # NOTE: RFC 6901 escapes, and a lone surrogate written as its escape: the path goes back
    # to the client in a JSON message, which must stay encodable.
    return _visible(key.replace("~", "~0").replace("/", "~1"))


def _visible(text: str) -> str:
    return _SURROGATE.sub(lambda m: f"\\u{ord(m.group()):04x}", text)


def _pointer(path: str) -> str:
    return path or "/ (the whole body)"


def _short(text: str) -> str:
    return text if len(text) <= 24 else f"{text[:12]}...({len(text)} digits)"


class _DuplicateKey(StrictJsonError):
    pass


def _unique_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    """A JSON object, refused when a key repeats.

    NOTE: JSON leaves duplicate keys undefined, and parsers disagree on which one wins: a proxy
    or a log reading the first ``"method"`` while the host acts on the last is how requests get
    smuggled. One object with one meaning, or an error.
    """
    value = dict(pairs)
    if len(value) != len(pairs):
        seen: set[str] = set()
        for key, _ in pairs:
            if key in seen:
                shown = _visible(key)
                raise _DuplicateKey(
                    f"Parse error: the key {shown!r} appears twice in one object; "
                    "send each key once (parsers disagree about which one wins)",
                    {"duplicateKey": shown},
                )
            seen.add(key)
    return value


# NOTE: one decoder for every body (json.loads with hooks made a decoder and its scanner per
# call); what a parse found travels on the calling thread's own list.
_local = threading.local()
_DECODER = json.JSONDecoder(
    object_pairs_hook=_unique_keys,
    parse_constant=lambda text: _found(_Bad(text, "is not a JSON number")),
    parse_float=_float,
    parse_int=_int,
)
# NOTE: neither is in the json module's typed surface; both are in every CPython's.
_scan: Callable[[str, int], tuple[Any, int]] = getattr(_DECODER, "scan_once")  # noqa: B009
_space: Callable[[str, int], re.Match[str]] = getattr(json.decoder, "WHITESPACE").match  # noqa: B009
