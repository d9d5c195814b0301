"""What is wrong with a name, said so that the fix is obvious: the character, and a name that works.

A name copied from a document or a chat often carries a character that looks right and is not:
an en dash for a hyphen, a no-break space, curly quotes. Those are named with their Unicode code
point, because on screen they cannot be told apart.
"""

from __future__ import annotations

import re
import unicodedata

__all__ = ["describe_characters", "plain_name", "tool_name"]

# Characters that look like ASCII ones, and the ASCII they pass for.
_LOOKALIKES = {
    "\u2010": "-",
    "\u2011": "-",
    "\u2012": "-",
    "\u2013": "-",
    "\u2014": "-",
    "\u2212": "-",
    "\u00a0": " ",
    "\u2007": " ",
    "\u202f": " ",
    "\u2018": "'",
    "\u2019": "'",
    "\u201c": '"',
    "\u201d": '"',
    "\u0430": "a",
    "\u0435": "e",
    "\u043e": "o",
    "\u0440": "p",
    "\u0441": "c",
    "\u0445": "x",
}
_WORDS = {" ": "a space", "-": "a hyphen", ".": "a dot"}


def _ascii(text: str) -> str:
    return "".join(_LOOKALIKES.get(c, c) for c in text)


def describe_characters(text: str, allowed: str) -> str:
    """The characters of ``text`` outside the regex class ``allowed``, named for a person.

    Returns:
        Text like ``'X' (U+2013 EN DASH, which looks like '-')`` (X being the character
        itself), ``a space and '!'``, or ``""`` when every character is allowed.
    """
    pattern = re.compile(f"[{allowed}]")
    found: list[str] = []
    for char in dict.fromkeys(text):
        if pattern.match(char):
            continue
        if not char.isascii() or not char.isprintable():
            name = unicodedata.name(char, "an unnamed character")
            like = _LOOKALIKES.get(char)
            looks = f", which looks like '{like}'" if like and like != " " else ""
            found.append(f"'{char}' (U+{ord(char):04X} {name}{looks})")
        else:
            found.append(_WORDS.get(char, f"'{char}'"))
    if len(found) <= 1:
        return "".join(found)
    return ", ".join(found[:-1]) + " and " + found[-1]


def plain_name(text: str) -> str:
    """A name templates and handlers can use made from ``text``: ``the-ticket`` → ``the_ticket``."""
    name = re.sub(r"\W+", "_", _ascii(text), flags=re.ASCII).strip("_") or "name"
    return f"_{name}" if name[0].isdigit() else name


def tool_name(text: str) -> str:
    """A valid MCP tool name made from ``text`` (``close ticket!`` → ``close_ticket``)."""
    name = re.sub(r"[^A-Za-z0-9_.-]+", "_", _ascii(text).strip()).strip("_")
    return (name or "my_tool")[:128]
