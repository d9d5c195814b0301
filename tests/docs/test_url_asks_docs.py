"""docs/url-asks.md: its example is the shipped one, it validates, and it runs as the page says."""

from __future__ import annotations

import hashlib
import json
import re
import sqlite3
import subprocess
import sys
from pathlib import Path

from host.spec.check import check_project
from host.testing.harness import serve
from support.paths import ROOT

PAGE = (ROOT / "docs" / "url-asks.md").read_text()
EXAMPLE = ROOT / "examples" / "key-rotation"
KEY = "a-new-key-0123456789"


def test_the_pages_yaml_is_the_example() -> None:
    (block,) = [b for b in re.findall(r"```yaml\n(.*?)```", PAGE, re.S) if "mode: url" in b]
    shipped = (EXAMPLE / "specs" / "keys.yaml").read_text()
    assert shipped.split("\n", 1)[1] == block  # after the editor's schema line


def test_the_example_validates_with_auth_and_warns_without() -> None:
    specs = [EXAMPLE / "specs"]
    assert check_project(specs, auth=True).diagnostics == []
    warned = check_project(specs, auth=False).diagnostics
    assert [d.rule for d in warned] == ["url-ask-unprotected"]


def test_the_kit_answers_the_page_and_only_the_hash_is_kept(tmp_path: Path) -> None:
    with serve(EXAMPLE / "specs", data_dir=tmp_path) as mcp:
        mcp.on_url({"new_key": {"action": "accept", "content": {"api_key": KEY}}})
        result = mcp.tools.call("rotate_api_key", {"service": "billing"})
        declined = mcp.tools.call("rotate_api_key", {"service": "search"}, answers="decline")
    digest = hashlib.sha256(KEY.encode()).hexdigest()
    assert result.json() == {"rotated": True, "service": "billing", "sha256": digest[:12]}
    assert declined.json() == {"rotated": False, "reason": "The user declined to enter a key."}
    with sqlite3.connect(tmp_path / "keys.db") as conn:
        assert conn.execute("SELECT service, sha256 FROM keys").fetchall() == [("billing", digest)]
    assert not [p for p in tmp_path.rglob("*") if p.is_file() and KEY.encode() in p.read_bytes()]


def test_the_examples_run_with_host_test() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "host", "test", str(EXAMPLE / "specs")],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    assert "2 passed, 0 failed" in done.stdout


def test_host_tools_names_the_url_ask() -> None:
    argv = [sys.executable, "-m", "host", "tools", "--specs", str(EXAMPLE / "specs")]
    text = subprocess.run(argv, capture_output=True, text=True, timeout=60).stdout
    assert "asks: new_key (url ask) (api_key)" in text
    listed = subprocess.run([*argv, "--format", "json"], capture_output=True, text=True, timeout=60)
    (tool,) = json.loads(listed.stdout)
    assert tool["questions"][0]["mode"] == "url"
