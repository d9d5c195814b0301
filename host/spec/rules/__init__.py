"""The validator's rules, one module per family, and the order in which a check applies them.

The table of every rule (id, severity, summary, fix) is :data:`host.spec.rulebook.RULES`; the
modules here find the problems that those rules name.
"""

from host.spec.rules.advice import check_advice
from host.spec.rules.examples import check_examples
from host.spec.rules.facts import DocumentRule, ToolFacts, ToolRule
from host.spec.rules.forms import check_forms
from host.spec.rules.handlers import check_handlers
from host.spec.rules.io import check_io
from host.spec.rules.io_intent import check_io_intent, with_misplaced_properties
from host.spec.rules.locks import check_locks
from host.spec.rules.order import check_names, check_order
from host.spec.rules.policy import (
    check_durations,
    check_policy,
    check_remember_blocks,
    check_remember_keys,
)
from host.spec.rules.project import (
    CheckedTool,
    duplicate_servers,
    duplicate_tool,
    elicitation,
    no_tools,
    scopes_at,
    unprotected,
)
from host.spec.rules.redaction import check_redacted_shown
from host.spec.rules.results import check_results
from host.spec.rules.shape import check_shape
from host.spec.rules.tasks import check_task
from host.spec.rules.templates import check_templates
from host.spec.rules.text import check_server_text, check_tool_text
from host.spec.rules.url_asks import check_url_asks

__all__ = [
    "DOCUMENT_RULES",
    "SERVER_RULES",
    "TOOL_RULES",
    "WRITTEN_RULES",
    "CheckedTool",
    "DocumentRule",
    "ToolFacts",
    "ToolRule",
    "check_shape",
    "duplicate_servers",
    "duplicate_tool",
    "elicitation",
    "no_tools",
    "scopes_at",
    "unprotected",
    "with_misplaced_properties",
]

# NOTE: check_shape comes first and stands apart: it also says whether a document can be built
# into the model at all, and only documents that can are given to the tool rules below. The
# project's rules (rules/project.py) come last, when every document has been seen.

DOCUMENT_RULES: tuple[DocumentRule, ...] = (check_durations,)
"""Rules for every document, whatever its kind."""

SERVER_RULES: tuple[DocumentRule, ...] = (check_server_text,)
"""Rules for the ``kind: server`` document."""

WRITTEN_RULES: tuple[ToolRule, ...] = (check_io, check_io_intent)
"""Rules for each tool's schemas as written, before a misplaced property is read as meant."""

TOOL_RULES: tuple[ToolRule, ...] = (
    check_results,
    check_policy,
    check_remember_keys,
    check_remember_blocks,
    check_locks,
    check_order,
    check_names,
    check_forms,
    check_url_asks,
    check_redacted_shown,
    check_task,
    check_templates,
    check_handlers,
    check_examples,
    check_tool_text,
    check_advice,
)
"""Rules for each ``kind: tool`` document that was built into the model, in this order.

NOTE: these see a property indented beside ``properties:`` as the author meant it (one of them),
so that one mis-indent is one error (reported by ``WRITTEN_RULES``), not one per use of it."""
