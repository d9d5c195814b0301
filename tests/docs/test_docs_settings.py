"""docs/operating.md's settings table: every ``HOST_*`` variable the code reads, and its default.

The names come from the source of ``host/`` (every ``HOST_NAME`` it mentions), so a new variable
without a row fails here, and so does a row for a variable the code no longer reads.
"""

from __future__ import annotations

import re

from host.auth.settings import AuthSettings
from host.settings import Settings
from support.paths import ROOT

PAGE = (ROOT / "docs" / "operating.md").read_text()


def table() -> list[tuple[str, str]]:
    """Each row of the Settings section's table: the variable, and its default cell."""
    start = PAGE.index("\n## Settings\n")
    text = PAGE[start : PAGE.index("\n## ", start + 1)]
    return re.findall(r"^\| `(HOST_[A-Z_]+)` \| ([^|]*) \|", text, re.M)


def test_every_variable_the_code_reads_has_one_row() -> None:
    code = "".join(path.read_text() for path in sorted((ROOT / "host").rglob("*.py")))
    read = set(re.findall(r"\bHOST_[A-Z][A-Z_]*[A-Z]\b", code))
    listed = [name for name, _ in table()]
    assert len(listed) == len(set(listed))
    assert set(listed) == read


def test_the_defaults_it_names_are_the_codes() -> None:
    defaults = {name: default.strip() for name, default in table()}
    settings, auth = Settings(), AuthSettings()
    assert defaults["HOST_SPECS"] == f"`{settings.specs_dir}`"
    assert defaults["HOST_DATA_DIR"] == f"`{settings.data_dir}`"
    assert defaults["HOST_STATE_TTL"] == f"`{settings.state_ttl_s:g}`"
    assert defaults["HOST_MAX_BODY"] == f"`{settings.max_body}`"
    assert defaults["HOST_LOG_LEVEL"] == f"`{settings.log_level}`"
    assert defaults["HOST_ANSWER_TIMEOUT"] == f"`{settings.answer_timeout_s:g}`"
    assert defaults["HOST_SESSION_TTL"] == f"`{settings.session_ttl_s:g}`"
    assert defaults["HOST_AUDIT_RETENTION"] == f"`{settings.audit_retention_s / 86400:g}d`"
    assert defaults["HOST_AUDIT_KEEP"] == f"`{settings.audit.keep_s / 86400:g}d`"
    assert defaults["HOST_AUDIT_HELD_MAX"] == f"`{settings.audit.held_max}`"
    assert defaults["HOST_AUDIT_EXPORT_MAX"] == f"`{settings.audit.export_max}`"
    assert defaults["HOST_AUTH_LEEWAY"] == f"`{auth.leeway_s:g}`"
    assert settings.elicitation and defaults["HOST_ELICITATION"] == "`on`"
    assert settings.metrics and defaults["HOST_METRICS"] == "`on`"
