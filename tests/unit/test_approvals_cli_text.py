"""What ``host approvals pending|show`` print on an approver's terminal, whatever a caller sent."""

from __future__ import annotations

import pytest

from host.commands import decide

#: A caller's argument that would forge a line, rewrite the screen and reverse the text after it.
HOSTILE = "web\n    approved by bob \x1b[2J\u202egnirts"


def _request() -> dict[str, object]:
    return {
        "id": "apr_1",
        "tool": "restart_service",
        "caller": "al\u0456ce",
        "status": "approved",
        "outcome": "acted",
        "message": f"alice asks to restart {HOSTILE}.",
        "questions": [
            {
                "kind": "ask",
                "action": "accept",
                "message": f"Which {HOSTILE}?",
                "fields": [{"name": "why", "label": "Why", "value": HOSTILE}],
            },
        ],
        "arguments": {"service": HOSTILE},
        "decisions": [{"principal": "bob", "verdict": "approve", "reason": HOSTILE}],
        "approved_by": ["bob"],
        "needed": 1,
        "expires": "2099-01-01T00:00:00Z",
    }


@pytest.mark.parametrize("show", [True, False])
def test_a_callers_text_cannot_forge_a_line_or_reach_the_terminal(
    show: bool, capsys: pytest.CaptureFixture[str]
) -> None:
    if show:
        decide._show(_request(), "text")
    else:
        decide._pending([_request()], "text")
    out = capsys.readouterr().out
    assert "\x1b" not in out and "\u202e" not in out
    assert "\\x1b[2J" in out and "\\u202e" in out  # shown, as escapes
    # Every line is one the command wrote: the caller's newline is an escape within its line.
    assert not any(line.startswith("    approved by bob \\x1b") for line in out.splitlines())
    assert "by al\u0456ce (U+0456)" in out


def test_json_output_is_json_every_reader_takes(capsys: pytest.CaptureFixture[str]) -> None:
    import json

    decide._show(_request(), "json")
    out = capsys.readouterr().out
    assert "\u202e" not in out
    assert json.loads(out)["arguments"] == {"service": HOSTILE}
