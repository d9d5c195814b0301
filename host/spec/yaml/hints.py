"""Plain-language hints for YAML syntax errors, placed next to the parser's own words.

The parser says what it met ("mapping values are not allowed here"); a spec author needs to know
what to change. Each hint looks at the source line the parser stopped on and names the usual
cause: a value with ``: `` or a leading ``{`` that needs quotes, a tab in the indentation, a key
not lined up with its neighbours, a list item whose ``-`` lacks its space.
"""

from __future__ import annotations

import json
import re

__all__ = ["quoted", "syntax_hint", "syntax_place"]

_KEY = re.compile(
    r"^(?P<indent> *)(?P<dashes>(?:- +)*)(?P<key>[^\s#:'\"{}\[\],&*!|>%@`-][^:#]*?):(?: |$)"
)
_LIST_ITEM = re.compile(r"^(?P<indent> *)- ")
_TIGHT_DASH = re.compile(r"^ *-[^\s-]")


def quoted(value: str) -> str:
    """``value`` as a double-quoted YAML scalar (the form to suggest to an author)."""
    return json.dumps(value, ensure_ascii=False)


def syntax_place(problem: str, context: str, problem_line: int, context_line: int) -> int:
    """The 1-based line to report a syntax error at: where the author must edit.

    NOTE: for a key without its colon, or a quote never closed, the parser stops lines later
    (at the end of the file, for the quote); the line it names in its context is the one to fix.
    """
    if context_line and (
        "could not find expected ':'" in problem
        or ("end of stream" in problem and "quoted scalar" in context)
        or "while parsing a flow" in context
    ):
        return context_line
    return problem_line


def syntax_hint(problem: str, context: str, text: str, line: int, column: int) -> str:
    """A hint for the syntax error ``problem`` at ``line``:``column`` of ``text``, or ``""``."""
    lines = text.splitlines()
    source = lines[line - 1] if 0 < line <= len(lines) else ""
    lead = source[: len(source) - len(source.lstrip(" \t"))]
    if "\t" in lead or "'\\t'" in problem or "tab" in problem:
        return (
            f"line {line} has a tab in its indentation; YAML indents with spaces only: "
            "replace the tab with spaces"
        )
    if "could not find expected ':'" in problem:
        return "a key needs ': ' (a colon and a space) after it"
    if "end of stream" in problem and "quoted scalar" in context:
        return f"the quote opened on line {line} is never closed: close it on the same line"
    if "found undefined alias" in problem:
        return "an alias (*name) needs an anchor (&name) earlier in the same document"
    if "that cannot start any token" in problem:
        return "quote a value that starts with @ or `"
    value = _value_hint(source, column)
    if value:
        return value
    if "mapping values are not allowed" in problem:
        return _continued(lines, line, source)
    if "expected <block end>" in problem or "did not find expected" in problem:
        return _misaligned(lines, line, source)
    if "while parsing a flow" in context and ("got '<" in problem):
        return (
            f"a '{{' or '[' on line {line} is not closed where the line ends: close it, or "
            "quote the value if it is text"
        )
    if "while parsing a flow" in context:
        return (
            "inside {...} or [...] a ',' ends a value and ': ' starts one: quote values that "
            "contain them, or write the mapping as indented lines"
        )
    return ""


def _value_hint(source: str, column: int) -> str:
    """A value that must be quoted: it contains ': ', or starts with '{' or '[' and goes on."""
    match = _KEY.match(source)
    if match is None:
        return ""
    key = match["key"].strip()
    value = _strip_comment(source[match.end() :]).strip()
    start = match.end() + 1
    if not value or column <= start:
        return ""
    if value.startswith("{{"):
        return f"a value that starts with '{{{{' must be quoted: {key}: {quoted(value)}"
    if value[0] in "{[" and not _closed(value):
        kind = "a mapping" if value[0] == "{" else "a list"
        return (
            f"a value that starts with '{value[0]}' is read as {kind}; if it is text, "
            f"quote it: {key}: {quoted(value)}"
        )
    if ": " in value and value[0] not in "\"'{[":
        return (
            f"the value of '{key}' contains ': ', which YAML reads as another key; quote the "
            f"whole value: {key}: {quoted(value)}"
        )
    return ""


def _closed(value: str) -> bool:
    """True when a flow value's brackets close at its very end (then it is meant as one)."""
    depth = 0
    for index, char in enumerate(value):
        depth += char in "{["
        depth -= char in "}]"
        if depth == 0:
            return index == len(value) - 1
    return False


def _strip_comment(value: str) -> str:
    found = re.search(r"(^|\s)#", value)
    return value[: found.start()] if found else value


def _previous(lines: list[str], line: int) -> tuple[int, str] | None:
    """The nearest line above ``line`` with content (not blank, not only a comment)."""
    for number in range(line - 1, 0, -1):
        text = lines[number - 1]
        if text.strip() and not text.lstrip().startswith("#"):
            return number, text
    return None


def _key_column(text: str) -> tuple[str, int] | None:
    match = _KEY.match(text)
    if match is None:
        return None
    return match["key"].strip(), len(match["indent"]) + len(match["dashes"]) + 1


def _continued(lines: list[str], line: int, source: str) -> str:
    """The key on ``line`` is indented under a key whose text it was read as more of."""
    own = _key_column(source)
    above = _previous(lines, line)
    if own is None or above is None:
        return ""
    number, text = above
    if _TIGHT_DASH.match(text):
        return f"a list item needs a space after its '-' (line {number}): write '- ' there"
    previous = _key_column(text)
    if previous is None:
        return ""
    key, column = own
    before, before_column = previous
    return (
        f"'{key}' is indented more than '{before}' on line {number}, so YAML reads it as more "
        f"of that value; line it up with '{before}' (column {before_column})"
        if column > before_column
        else ""
    )


def _misaligned(lines: list[str], line: int, source: str) -> str:
    """A key or list item not lined up with the ones above it."""
    above = _previous(lines, line)
    if above is None:
        return ""
    item = _LIST_ITEM.match(source)
    if item is not None:
        for number in range(line - 1, 0, -1):
            other = _LIST_ITEM.match(lines[number - 1])
            if other is not None and len(other["indent"]) != len(item["indent"]):
                return (
                    f"this list item's '-' is at column {len(item['indent']) + 1} but the list "
                    f"above (line {number}) has its '-' at column {len(other['indent']) + 1}: "
                    "line the dashes up"
                )
        return ""
    own = _key_column(source)
    number, text = above
    previous = _key_column(text)
    if own is None or previous is None or own[1] == previous[1]:
        return ""
    return (
        f"'{own[0]}' is not lined up with the keys above it: indent it like '{previous[0]}' on "
        f"line {number} (column {previous[1]})"
    )
