"""Redacted fields never reach the client's errors or the log: a schema error names the field
and the rule, a handler's exception that quotes the value is logged with "[redacted]"."""

from __future__ import annotations

import json
import logging
from pathlib import Path

import pytest

from host.logs import JsonFormatter
from host.spec import load_project
from support.helpdesk import write_project
from support.modern import Mcp, make_client

SERVER = """
kind: server
name: vault
version: "1"
elicitation: {enabled: true}
"""

TOOLS = """
kind: tool
name: unlock
description: Unlocks with a pin, after a code.
input:
  properties: {pin: {type: string, maxLength: 12, pattern: "^p"}}
  required: [pin]
audit: {redact: [pin, code]}
steps:
  - ask: second
    message: The code?
    form:
      code: {type: string, maxLength: 6, description: The code}
  - act: work:unlock
"""

HANDLERS = """
def unlock(pin, code):
    raise ValueError(f"the pin {pin} and the code {code} do not match")
"""

PIN = "p-4417-clear"
CODE = "c9920"


@pytest.fixture
def vault(tmp_path: Path) -> Mcp:
    specs, handlers = write_project(tmp_path, SERVER, TOOLS, HANDLERS)
    return make_client(tmp_path, load_project(specs, handlers), specs_dir=specs)


def test_a_schema_error_names_the_field_and_the_rule_not_the_value(vault: Mcp) -> None:
    wrong = "not-a-pin-8231-too-long"
    result = vault.result(vault.call("unlock", {"pin": wrong}))

    text = result["content"][0]["text"]
    assert result["isError"] is True and "pin" in text and "maxLength" in text
    assert wrong not in json.dumps(result)

    first = vault.result(vault.call("unlock", {"pin": PIN}))
    long_code = "code-5512-far-too-long"
    answered = vault.call(
        "unlock",
        {"pin": PIN},
        responses={"second": {"action": "accept", "content": {"code": long_code}}},
        state=first["requestState"],
    )
    assert "code" in answered.text and "maxLength" in answered.text
    assert long_code not in answered.text


def test_a_handler_exception_quoting_the_values_is_logged_redacted(
    vault: Mcp, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="host")
    first = vault.result(vault.call("unlock", {"pin": PIN}))
    failed = vault.result(
        vault.call(
            "unlock",
            {"pin": PIN},
            responses={"second": {"action": "accept", "content": {"code": CODE}}},
            state=first["requestState"],
        )
    )

    assert failed["isError"] is True and "internal error" in failed["content"][0]["text"]
    formatter = JsonFormatter()
    lines = [formatter.format(record) for record in caplog.records]
    [failure] = [line for line in lines if "handler failed" in line]
    assert "ValueError: the pin [redacted] and the code [redacted] do not match" in failure
    for line in lines:
        assert PIN not in line and CODE not in line, line
