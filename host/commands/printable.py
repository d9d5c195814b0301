"""Text a caller chose, made safe to print on an operator's terminal.

A principal, a tool's arguments or an answer can hold anything a caller sent: a newline that
forges a second record, an ANSI escape that rewrites the screen, a bidi override (U+202E) that
shows text reversed, a lone surrogate that no encoder writes, ``NaN`` that no JSON reader takes.
:func:`printable` shows such characters as escapes; :func:`json_text` writes JSON that every
reader can parse and no terminal can misrender.
"""

from __future__ import annotations

import json
import re
import unicodedata
from typing import Any

from host.jsonvalues import storable

__all__ = ["json_text", "printable"]

# Anything outside printable ASCII is looked at; most text never is.
_MAYBE = re.compile(r"[^\x20-\x7e]")
# Control, format (bidi marks, overrides and isolates, zero-width), surrogate, private-use,
# unassigned, and line or paragraph separators.
_HIDDEN = frozenset({"Cc", "Cf", "Cs", "Co", "Cn", "Zl", "Zp"})
_NAMED = {"\n": "\\n", "\r": "\\r", "\t": "\\t"}


def printable(text: str) -> str:
    """``text`` with every character that could change how a line looks shown as an escape."""
    if not _MAYBE.search(text):
        return text
    return "".join(_escape(char) for char in text)


def _escape(char: str) -> str:
    if char in _NAMED:
        return _NAMED[char]
    if char == "\x7f" or (char >= "\x80" and unicodedata.category(char) in _HIDDEN):
        code = ord(char)
        return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"
    if char < "\x20":
        return f"\\x{ord(char):02x}"
    return char


def json_text(value: Any, *, indent: int | None = None) -> str:
    """``value`` as JSON any parser reads, with characters a terminal acts on escaped."""
    text = json.dumps(storable(value), indent=indent, ensure_ascii=False, allow_nan=False)
    # NOTE: outside strings JSON holds only ASCII, so every such character is inside one, where
    # a \\u escape means the same character.
    if not _MAYBE.search(text):
        return text
    return "".join(
        f"\\u{ord(c):04x}" if c >= "\x7f" and unicodedata.category(c) in _HIDDEN else c
        for c in text
    )
