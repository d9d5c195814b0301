"""Ask an elicitation form in a terminal: choices by number, checkboxes as y/n, defaults on Enter.

Used by ``host call`` so an ops engineer can try a spec's questions without an MCP client. Every
answer is checked as it is typed; a wrong one is asked again with the reason.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from typing import Any, TextIO

__all__ = ["Prompter"]


class Cancelled(Exception):
    """The user left the form (end of input, or ``:cancel``)."""


class Prompter:
    """Asks one form at a time on ``out``, reading answers from ``read``.

    Args:
        read: Returns the next line the user typed; raises EOFError at end of input.
        out: Where the questions go (stderr, so stdout stays the result).
    """

    def __init__(self, read: Callable[[str], str], out: TextIO) -> None:
        self.read = read
        self.out = out

    def answer(self, message: str, schema: Mapping[str, Any]) -> dict[str, Any]:
        """Show ``message`` and the form; return ``{"action", "content"?}``."""
        self.out.write(f"\n? {message}\n")
        try:
            if _is_confirm(schema):
                return self._confirm(schema["properties"]["confirm"])
            choice = self._choose("  Answer it? [Y]es, [n]o (decline), [c]ancel: ", default="y")
            if choice != "accept":
                return {"action": choice}
            required = set(schema.get("required", ()))
            content: dict[str, Any] = {}
            for name, field in schema.get("properties", {}).items():
                value = self._field(name, field, name in required)
                if value is not None:
                    content[name] = value
        except (Cancelled, EOFError):
            self.out.write("  (cancelled)\n")
            return {"action": "cancel"}
        return {"action": "accept", "content": content}

    def page(self, message: str, url: str) -> dict[str, Any]:
        """A question asked on a host page (a URL ask): the link, and the person's consent.

        NOTE: what the page asks is typed there, in a browser, never in this terminal.
        """
        self.out.write(f"\n? {message}\n  It is asked on a page of the host's: open {url}\n")
        try:
            choice = self._choose(
                "  Opened and submitted it? [Y]es, [n]o (decline), [c]ancel: ", default="y"
            )
        except (Cancelled, EOFError):
            self.out.write("  (cancelled)\n")
            return {"action": "cancel"}
        return {"action": choice}

    def _confirm(self, field: Mapping[str, Any]) -> dict[str, Any]:
        """A confirm, asked once: its checkbox is the answer.

        NOTE: no default here: a stray Enter must not approve what a confirm guards.
        """
        label = field.get("description") or "Confirm"
        choice = self._choose(f"  {label}? [y]es, [n]o (decline), [c]ancel: ", default=None)
        if choice != "accept":
            return {"action": choice}
        return {"action": "accept", "content": {"confirm": True}}

    def _choose(self, prompt: str, *, default: str | None) -> str:
        """``accept``, ``decline`` or ``cancel``, asking again until the answer is one of them."""
        while True:
            line = self._ask(prompt).lower() or (default or "")
            for action, words in _ACTIONS.items():
                if line in words:
                    return action
            self.out.write("    type y, n or c\n")

    def _ask(self, prompt: str) -> str:
        self.out.write(prompt)
        self.out.flush()
        line = self.read("").strip()
        if line == ":cancel":
            raise Cancelled
        return line

    def _field(self, name: str, field: Mapping[str, Any], required: bool) -> Any:
        label = field.get("title") or name
        if field.get("description"):
            label = f"{label} ({field['description']})"
        options = _options(field)
        if options:
            for number, (_, title) in enumerate(options, 1):
                self.out.write(f"    {number}. {title}\n")
        while True:
            line = self._ask(f"  {label}{_hint(field, required)}: ")
            if not line:
                if "default" in field:
                    return field["default"]
                if not required:
                    return None
                self.out.write("    an answer is required\n")
                continue
            try:
                return _parse(line, field, options)
            except ValueError as exc:
                self.out.write(f"    {exc}\n")


_ACTIONS = {
    "accept": ("y", "yes"),
    "decline": ("n", "no", "decline"),
    "cancel": ("c", "cancel"),
}


def _is_confirm(schema: Mapping[str, Any]) -> bool:
    """True for a confirm's form: one required boolean field named ``confirm``."""
    properties = schema.get("properties") or {}
    return (
        list(properties) == ["confirm"]
        and properties["confirm"].get("type") == "boolean"
        and list(schema.get("required") or []) == ["confirm"]
    )


def _options(field: Mapping[str, Any]) -> list[tuple[Any, str]]:
    """(value, title) of each choice of a single or multiple choice field."""
    source = field.get("items", field) if field.get("type") == "array" else field
    if "oneOf" in source or "anyOf" in source:
        return [
            (o["const"], str(o.get("title", o["const"])))
            for o in source.get("oneOf") or source["anyOf"]
        ]
    if "enum" in source:
        names = field.get("enumNames") or source["enum"]
        return [(v, str(t)) for v, t in zip(source["enum"], names, strict=False)]
    return []


def _hint(field: Mapping[str, Any], required: bool) -> str:
    kind = field.get("type")
    parts = []
    if kind == "boolean":
        parts.append("y/n")
    elif kind == "array":
        parts.append("numbers, comma-separated")
    elif "enum" in field or "oneOf" in field:
        parts.append("number")
    elif kind in ("number", "integer"):
        parts.append(kind)
    if "default" in field:
        parts.append(f"default {json.dumps(field['default'])}")
    if not required:
        parts.append("optional")
    return f" [{', '.join(parts)}]" if parts else ""


def _pick(text: str, options: list[tuple[Any, str]]) -> Any:
    if text.isdigit() and 1 <= int(text) <= len(options):
        return options[int(text) - 1][0]
    for value, title in options:
        if text in (str(value), title):
            return value
    raise ValueError(f"choose a number from 1 to {len(options)}")


def _parse(text: str, field: Mapping[str, Any], options: list[tuple[Any, str]]) -> Any:
    """The typed value of ``text`` for ``field``; ValueError says what to type instead."""
    kind = field.get("type")
    if kind == "boolean":
        if text.lower() in ("y", "yes", "true"):
            return True
        if text.lower() in ("n", "no", "false"):
            return False
        raise ValueError("type y or n")
    if kind == "array":
        return [_pick(part.strip(), options) for part in text.split(",") if part.strip()]
    if options:
        return _pick(text, options)
    if kind == "integer":
        try:
            return int(text)
        except ValueError:
            raise ValueError("type a whole number") from None
    if kind == "number":
        try:
            return float(text) if any(c in text for c in ".eE") else int(text)
        except ValueError:
            raise ValueError("type a number") from None
    return text
