"""Every rule the validator knows: stable ids, default severity, what it means and how to fix it.

The ids are a public contract (``--format json``/``sarif`` carry them, users silence nothing by
them yet but grep for them); never rename one. docs/rules.md is generated from this table:
``python -m host.spec.rules_doc docs/rules.md``.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable
from dataclasses import dataclass

from host.spec.diagnostics import Diagnostic, Severity
from host.spec.model import Pos

__all__ = ["RULES", "Rule", "did_you_mean", "error", "one_of", "warning"]


@dataclass(frozen=True)
class Rule:
    """One rule: its id, severity, a one-line summary and a one-line fix."""

    id: str
    severity: Severity
    summary: str
    fix: str


_TABLE: list[tuple[str, Severity, str, str]] = [
    # Files and YAML.
    (
        "read-error",
        "error",
        "A spec file cannot be read.",
        "Check that the path exists and is readable; save the file as UTF-8 (the message gives "
        "the line of the first byte that is not).",
    ),
    (
        "yaml-syntax",
        "error",
        "The file is not valid YAML.",
        "Do what the hint says: quote a value with ': ', ' #', a leading '{' or a comma in "
        "{...}; indent with spaces, keys lined up; '- ' before each step; '---' between documents.",
    ),
    (
        "duplicate-key",
        "error",
        "A mapping has the same key twice.",
        "Delete or rename one; a second `kind` means a missing `---`, a second step kind a "
        "missing `- `.",
    ),
    # Shape (the JSON Schema pass).
    (
        "unknown-kind",
        "error",
        "A document's `kind` is neither `server` nor `tool`.",
        "Write `kind: tool` or `kind: server`.",
    ),
    (
        "unknown-key",
        "error",
        "A key that the spec language does not have at that place.",
        "Use one of the keys the message lists (often a typo).",
    ),
    ("missing-key", "error", "A required key is absent.", "Add the key the message names."),
    (
        "wrong-type",
        "error",
        "A value has the wrong type (a list where a mapping belongs, ...).",
        "Write the type the message asks for; quote numbers meant as text.",
    ),
    (
        "bad-value",
        "error",
        "A value is outside what the key allows.",
        "Use one of the values the message lists.",
    ),
    (
        "step-kind",
        "error",
        "A step is none of `read`, `ask`, `confirm`, `act`.",
        "Start the step with `read:`, `ask:`, `confirm:` or `act:`.",
    ),
    (
        "bad-name",
        "error",
        "A step or form field name is not a plain identifier.",
        "Use letters, digits and `_` (not starting with a digit): templates and handlers use it.",
    ),
    (
        "tool-name",
        "error",
        "A tool name is not 1-128 characters of `[A-Za-z0-9_.-]` (MCP's rule), or is the host's "
        "own `sendElicitationResult`.",
        "Rename the tool, e.g. `close_ticket`.",
    ),
    (
        "handler-name",
        "error",
        "A handler is not written `module:function`.",
        "Write it like `helpdesk:close_ticket` (dotted modules for sub-packages).",
    ),
    # The whole project.
    (
        "duplicate-tool",
        "error",
        "Two tools have the same name.",
        "Rename one of them; tool names are unique across the spec directory.",
    ),
    (
        "duplicate-server",
        "error",
        "More than one `kind: server` document.",
        "Keep one `kind: server` document for the directory.",
    ),
    (
        "no-tools",
        "warning",
        "The specs hold no `kind: tool` document.",
        "Add a tool, or point the command at the right directory.",
    ),
    (
        "elicitation-disabled",
        "error",
        "A tool asks the user but elicitation is not enabled.",
        "Set `elicitation: {enabled: true}` in the `kind: server` document.",
    ),
    (
        "elicitation-off",
        "warning",
        "Tools ask the user but `elicitation: {enabled: false}` is written out: the kill switch "
        "is on, and their calls that need to ask get ELICITATION_DISABLED.",
        "Set `enabled: true` when the incident is over; leave it to keep them from asking.",
    ),
    (
        "scopes-unprotected",
        "warning",
        "Specs name `scopes`, but the environment sets no auth (`HOST_AUTH_ISSUER` or "
        "`HOST_AUTH_TOKENS`): served so, the scopes would protect nothing, and `host serve` "
        "refuses to start.",
        "Set `HOST_AUTH_ISSUER` and `HOST_AUTH_AUDIENCE`, or `HOST_AUTH_TOKENS`, where the host "
        "runs (see Securing the host); or remove the scopes.",
    ),
    (
        "url-ask-unprotected",
        "warning",
        "A tool has an `ask` with `mode: url`, but the environment sets no auth: nobody could "
        "sign in to the page that asks it, and `host serve` refuses to start.",
        "Set `HOST_AUTH_ISSUER` and `HOST_AUTH_AUDIENCE`, or `HOST_AUTH_TOKENS`, where the host "
        "runs (see Securing the host).",
    ),
    (
        "approve-unprotected",
        "warning",
        "A tool has an `approve` step, but the environment sets no auth: nobody could sign in "
        "to decide, and `host serve` refuses to start.",
        "Set `HOST_AUTH_ISSUER` and `HOST_AUTH_AUDIENCE`, or `HOST_AUTH_TOKENS`, where the host "
        "runs (see Securing the host).",
    ),
    # Input and output.
    (
        "json-schema",
        "error",
        "`input` or `output` is not valid JSON Schema (2020-12).",
        "Fix the keyword the message names (types are string, number, integer, ...).",
    ),
    (
        "schema-type",
        "error",
        "`input` or `output` is not a schema of `type: object`.",
        "Leave `type` out (object is implied) or write `type: object`.",
    ),
    (
        "schema-required",
        "error",
        "`required` names a property that `properties` does not define (every call is rejected).",
        "Add the property under `properties:`, or fix the name in `required`.",
    ),
    (
        "content-output",
        "error",
        "A tool declares `output` but its act has `returns: content` (no structured result).",
        "Remove `output:`, or drop `returns: content` and return a mapping.",
    ),
    (
        "result-output",
        "error",
        "A tool declares `output` but a question's `declined`/`cancelled`/`unticked` result, or "
        "a locked act's `busy`, is missing, a text, or does not fit it (clients reject such a "
        "result).",
        "Write each of them as a mapping that fits `output`.",
    ),
    (
        "mcp-header",
        "error",
        "An `x-mcp-header` in `input` is invalid or misplaced (clients would drop the tool).",
        "Put it on a string, integer or boolean property under `properties`, named like `Region`.",
    ),
    (
        "duration",
        "error",
        "A `timeout`, `timeouts`, `remember.for`, `lock_wait`, or an approve's `wait` or "
        "`expires` is not a duration, or is out of range.",
        "Write a number and a unit, like 30s, 10m, 8h or 7d (`remember` lasts at most 30d, "
        "`lock_wait` at most 5m, `expires` at most 7d, an approve's `wait` at most its "
        "`expires`); the message suggests a value that fits the key.",
    ),
    (
        "lock",
        "error",
        "An act has `lock_wait` or `busy` but no `lock`, so there is nothing to wait for.",
        "Add `lock: [names]` (the names whose values say which resource the act changes), or "
        "remove `lock_wait` and `busy`.",
    ),
    (
        "task",
        "error",
        "A tool says `task: optional` or `task: required` but no step of it waits on someone "
        "else (an `approve`, an `ask` with `mode: url`), so a call never becomes a task.",
        "Remove `task:` (it defaults to `optional` where a step can wait), or write `task: never`.",
    ),
    (
        "redact-field",
        "error",
        "`audit.redact` names something that is neither an input nor a form field of the tool, "
        "or a `remember.key` or an act's `lock:` uses a redacted field (an approval's key and "
        "a lock's name are stored in clear).",
        "Name an input or form field (the message lists them), or remove it; keep redacted "
        "fields out of `remember.key` and `lock:`.",
    ),
    (
        "remember-key",
        "warning",
        "A `remember.key` leaves out input properties that the act receives: a remembered yes "
        "also approves calls that differ only in them.",
        "Add them to the key (`key: [service, environment, force]`), or remove `key:` to use "
        "the default key, a digest of every argument.",
    ),
    (
        "remember-key-blocks",
        "warning",
        "A `remember.key` template has `{% %}` or `{# #}` blocks: it is used as it renders, its "
        "values unescaped, so two calls whose values differ can share a key and one yes.",
        "Write the key as a list of names (`key: [service, environment]`) or with `{{ }}` "
        "expressions only.",
    ),
    # Order: questions before side effects.
    (
        "act-count",
        "error",
        "A tool has more than one `act` step, an `act` and a `result:`, or neither an `act` nor "
        "anything to return (a read or a `result:`).",
        "Give the tool one `- act: module:function`, as its last step; or, for a read-only "
        "tool, no act and a read or a `result:`.",
    ),
    (
        "order",
        "error",
        "A step comes after the `act`.",
        "Move it above the act: the act is the last step, after every question.",
    ),
    ("duplicate-step", "error", "Two steps have the same name.", "Rename one of the steps."),
    (
        "name-clash",
        "error",
        "A name is defined twice (an input, a step, a form field), or is `ctx`.",
        "Rename it so every name in scope means one thing.",
    ),
    (
        "read-side-effect",
        "error",
        "A `read` calls the tool's act handler.",
        "Reads run on every round before the user answers: call a read-only function there.",
    ),
    # Forms.
    (
        "form-type",
        "error",
        "A form field's type is not one MCP clients can render.",
        "Use string, number, integer, boolean, or array (multi-select of strings).",
    ),
    (
        "form-keyword",
        "error",
        "A form field uses a keyword MCP forms do not allow, or misuses one.",
        "Keep to the keywords the message lists for the field's type.",
    ),
    (
        "form-secret",
        "error",
        "A form field asks for a secret (password, token, API key, card, ...).",
        "MCP forbids secrets in forms: add `mode: url` to the ask (and `secret: true` to the "
        "field), so the host's own page asks it.",
    ),
    (
        "secret-form",
        "error",
        "A field says `secret: true` in an ask whose form the client shows (not `mode: url`).",
        "Add `mode: url` to the ask: only the host's own page may ask for a secret.",
    ),
    (
        "url-ask-shown",
        "error",
        "A template after a URL ask names one of its fields: the value typed on the host's page "
        "would reach the client, the model or the store.",
        "Remove the name from the template: only the handlers get what the page receives.",
    ),
    (
        "redacted-shown",
        "warning",
        "A template people read (an approve, confirm or ask `message`) names "
        "a field `audit.redact` keeps out of the record: approvers read `[redacted]` there.",
        "Remove the name from the template, or take the field out of `audit.redact`.",
    ),
    (
        "form-fill",
        "error",
        "A form field has an input's name but its ask has no `when:`.",
        "Guard the ask with `when: NAME is undefined`, or rename the field.",
    ),
    # Templates.
    (
        "template-syntax",
        "error",
        "A template or `when:` expression is not valid Jinja.",
        "Fix the Jinja syntax; write `when:` as a bare expression, without `{{ }}`.",
    ),
    (
        "template-name",
        "error",
        "A template uses a name that is not in scope at that step.",
        "Use an input field, an earlier read, an earlier answer field or question name.",
    ),
    (
        "template-optional",
        "error",
        "A template uses a name that may be undefined at that step (an optional input or field) "
        "without testing it, so the call fails whenever it is missing.",
        "Test it (`{% if note is defined %}`), use `note | default('')`, or make it required.",
    ),
    (
        "template-unrendered",
        "error",
        "A text that is not a template (`label`, `title`, `description`, ...) holds `{{ ... }}`, "
        "which would reach the user as written.",
        "Write plain text there, or move the dynamic part into `message:`.",
    ),
    # Handlers.
    (
        "handler-missing",
        "error",
        "The handler's module or function does not exist.",
        "Create it under the handlers directory, or fix the name (`--handlers DIR` to move it).",
    ),
    (
        "handler-syntax",
        "error",
        "A handler module is not valid Python.",
        "Fix the syntax error in the handler file.",
    ),
    (
        "handler-import",
        "error",
        "A handler module fails to import (only with `--import`).",
        "Fix the exception the message shows.",
    ),
    (
        "handler-signature",
        "error",
        "A handler is `async def`, or takes `*args`, `**kwargs` or positional-only parameters: "
        "the host calls it as a plain function with arguments by name.",
        "Write a plain `def` that names each parameter it needs.",
    ),
    (
        "handler-param",
        "error",
        "A handler parameter is not a name in scope at its step.",
        "Rename the parameter, give it a default, or bring the name into scope earlier.",
    ),
    (
        "handler-optional",
        "error",
        "A handler parameter without default may be undefined.",
        "Give the parameter a default, make the input required, or ask for it.",
    ),
    # Examples.
    (
        "example",
        "error",
        "An example names a question or approve step the tool does not have, or repeats a name.",
        "Use the tool's ask/confirm step names in `answers` and `expect.asks`, its approve step "
        "names in `approvals` and `expect.pending`.",
    ),
    # Advice.
    (
        "no-confirm",
        "warning",
        "A destructive tool acts without a `confirm`.",
        "Add a `confirm` step, or set `annotations: {destructiveHint: false}`.",
    ),
    (
        "merge-questions",
        "warning",
        "Two questions in a row could be one form.",
        "Merge their fields into one `ask` so the user fills in one form.",
    ),
]

RULES: dict[str, Rule] = {row[0]: Rule(*row) for row in _TABLE}


def error(pos: Pos, rule: str, message: str) -> Diagnostic:
    """An error diagnostic for a known rule."""
    assert rule in RULES, rule
    return Diagnostic(pos, rule, "error", message)


def warning(pos: Pos, rule: str, message: str) -> Diagnostic:
    """A warning diagnostic for a known rule."""
    assert rule in RULES, rule
    return Diagnostic(pos, rule, "warning", message)


def did_you_mean(word: str, candidates: Iterable[str]) -> str:
    """`` Did you mean 'x'?`` (with a leading space) for a close candidate, else ``""``."""
    pool = [c for c in candidates if c != word]
    match = difflib.get_close_matches(word, pool, n=1, cutoff=0.6)
    if not match:
        lowered = {c.lower(): c for c in pool}
        if word.lower() in lowered:
            match = [lowered[word.lower()]]
    return f" Did you mean '{match[0]}'?" if match else ""


def one_of(values: Iterable[str]) -> str:
    """``a, b, c`` sorted, for 'expected one of ...' messages."""
    return ", ".join(sorted(values))
