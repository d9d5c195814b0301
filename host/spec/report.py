"""Diagnostics as text (with the source line and a caret), JSON, or SARIF 2.1.0."""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Literal

from host.spec.diagnostics import Diagnostic
from host.spec.rulebook import RULES

__all__ = ["Format", "format_diagnostics"]

Format = Literal["text", "json", "sarif"]
_TOKEN = re.compile(r"[\w.\-/]+(?::[\w.]+)?")
_SARIF_SCHEMA = (
    "https://docs.oasis-open.org/sarif/sarif/v2.1.0/errata01/os/schemas/sarif-schema-2.1.0.json"
)


def format_diagnostics(diags: Sequence[Diagnostic], fmt: Format = "text") -> str:
    """Render ``diags`` (in the order given) as ``text``, ``json`` or ``sarif``.

    Text is ``file:line:col: severity: message [rule]`` followed by the source line and a caret,
    and is empty when there is nothing to report; JSON is a list of objects with ``rule``,
    ``severity``, ``file``, ``line``, ``column`` and ``message``.
    """
    if fmt == "json":
        return json.dumps([_plain(d) for d in diags], indent=2) + "\n"
    if fmt == "sarif":
        return json.dumps(_sarif(diags), indent=2) + "\n"
    if fmt == "text":
        files: dict[str, list[str]] = {}
        return "".join(_text(d, files) for d in diags)
    raise ValueError(f"unknown format {fmt!r}; use text, json or sarif")


def _plain(diag: Diagnostic) -> dict[str, Any]:
    return {
        "rule": diag.rule,
        "severity": diag.severity,
        "file": diag.pos.file,
        "line": diag.pos.line,
        "column": diag.pos.column,
        "message": diag.message,
    }


def _text(diag: Diagnostic, files: dict[str, list[str]]) -> str:
    pos = diag.pos
    where = f"{pos.file}:{pos.line}:{pos.column}" if pos.line > 0 else pos.file
    head = f"{where}: {diag.severity}: {diag.message} [{diag.rule}]\n"
    if pos.file not in files:
        files[pos.file] = _lines(pos.file)
    lines = files[pos.file]
    source = lines[pos.line - 1] if 0 < pos.line <= len(lines) else None
    if source is None:
        return head
    number = str(pos.line)
    gutter = " " * len(number)
    column = max(pos.column, 1)
    token = _TOKEN.match(source, column - 1)
    word = token[0] if token else "^"
    if ":" not in word and not word[0].isdigit():
        word = word.split(".")[0] or word  # `ticket` of `ticket.title`
    width = len(word)
    # NOTE: tabs are kept in the caret line's padding so the caret lines up in a terminal.
    padding = "".join("\t" if c == "\t" else " " for c in source[: column - 1])
    caret = padding + "^" + "~" * (width - 1)
    return f"{head}{gutter} |\n{number} | {source}\n{gutter} | {caret}\n"


def _lines(file: str) -> list[str]:
    try:
        return Path(file).read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError, ValueError):
        return []


def _sarif(diags: Sequence[Diagnostic]) -> dict[str, Any]:
    ids = sorted(RULES)
    rules = [
        {
            "id": rule_id,
            "shortDescription": {"text": RULES[rule_id].summary},
            "help": {"text": RULES[rule_id].fix},
            "defaultConfiguration": {"level": RULES[rule_id].severity},
        }
        for rule_id in ids
    ]
    results = []
    for diag in diags:
        location: dict[str, Any] = {"artifactLocation": {"uri": Path(diag.pos.file).as_posix()}}
        if diag.pos.line > 0:
            location["region"] = {
                "startLine": diag.pos.line,
                "startColumn": max(diag.pos.column, 1),
            }
        result: dict[str, Any] = {
            "ruleId": diag.rule,
            "level": diag.severity,
            "message": {"text": diag.message},
            "locations": [{"physicalLocation": location}],
        }
        if diag.rule in RULES:
            result["ruleIndex"] = ids.index(diag.rule)
        results.append(result)
    return {
        "$schema": _SARIF_SCHEMA,
        "version": "2.1.0",
        "runs": [
            {
                "tool": {"driver": {"name": "host validate", "rules": rules}},
                "columnKind": "unicodeCodePoints",
                "results": results,
            }
        ],
    }
