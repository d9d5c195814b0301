"""``host validate`` and ``host schema`` through the real command line: output and exit codes."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from host.cli import COMMANDS, main
from host.commands import validate as validate_command
from host.spec.schema import SCHEMA_PATH
from support.paths import ROOT

pytestmark = pytest.mark.served

BROKEN = ROOT / "tests" / "fixtures" / "broken"
SCRIPT = Path(sys.executable).parent / "host"


def run_host(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    command = [str(SCRIPT)] if SCRIPT.exists() else [sys.executable, "-m", "host"]
    return subprocess.run(
        [*command, *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, **(env or {})},
    )


def test_clean_specs_print_nothing_and_exit_0() -> None:
    done = run_host("validate", "specs/")
    assert (done.returncode, done.stdout, done.stderr) == (0, "", "")


def test_default_path_is_host_specs_or_specs() -> None:
    assert run_host("validate").returncode == 0
    done = run_host("validate", env={"HOST_SPECS": str(BROKEN / "order.yaml")})
    assert done.returncode == 1
    assert "[order]" in done.stdout


def test_errors_exit_1_in_every_format() -> None:
    path = str(BROKEN / "order.yaml")
    text = run_host("validate", path)
    assert text.returncode == 1
    assert f"{path}:14:5: error: the confirm step 'sure' comes after the act" in text.stdout
    plain = run_host("validate", "--format", "json", path)
    assert plain.returncode == 1
    assert [(d["rule"], d["line"], d["column"]) for d in json.loads(plain.stdout)] == [
        ("order", 14, 5),
        ("order", 16, 5),
    ]
    sarif = run_host("validate", "--format", "sarif", path)
    assert sarif.returncode == 1
    assert [r["ruleId"] for r in json.loads(sarif.stdout)["runs"][0]["results"]] == ["order"] * 2


def test_clean_json_is_an_empty_list() -> None:
    done = run_host("validate", "--format", "json", "specs")
    assert (done.returncode, json.loads(done.stdout)) == (0, [])


def test_warnings_exit_0_unless_strict() -> None:
    path = str(BROKEN / "no-confirm.yaml")
    loose = run_host("validate", path)
    assert loose.returncode == 0
    assert "warning:" in loose.stdout and "[no-confirm]" in loose.stdout
    assert run_host("validate", "--strict", path).returncode == 1


def test_bad_usage_exits_2() -> None:
    missing = run_host("validate", "no/such/dir")
    assert missing.returncode == 2
    assert "no/such/dir: no such file or directory" in missing.stderr
    assert run_host("validate", "--format", "xml", "specs").returncode == 2
    assert run_host("validate", "--bogus").returncode == 2
    assert "Traceback" not in missing.stderr


def test_handlers_are_parsed_not_imported_unless_asked() -> None:
    path = str(BROKEN / "handler-import.yaml")
    parsed = run_host("validate", path)
    assert (parsed.returncode, parsed.stdout) == (0, "")
    imported = run_host("validate", "--import", path)
    assert imported.returncode == 1
    assert "RuntimeError: the database is not reachable; fix what" in imported.stdout


def test_schema_prints_the_shipped_schema() -> None:
    done = run_host("schema")
    assert done.returncode == 0
    assert json.loads(done.stdout) == json.loads(SCHEMA_PATH.read_text())


def test_internal_failure_exits_3_without_traceback(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    def explode(*args: object, **kwargs: object) -> None:
        raise RuntimeError("kaboom")

    monkeypatch.setattr(validate_command, "check_project", explode)
    monkeypatch.delenv("HOST_DEBUG", raising=False)
    assert main(["validate", str(ROOT / "specs")]) == 3
    err = capsys.readouterr().err
    assert "internal error: RuntimeError: kaboom" in err
    assert "Traceback" not in err
    monkeypatch.setenv("HOST_DEBUG", "1")
    assert main(["validate", str(ROOT / "specs")]) == 3
    assert "Traceback" in capsys.readouterr().err


def test_a_command_that_fails_to_load_is_named_when_run_and_the_rest_still_work(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    import host.cli

    real = host.cli._command

    def broken(name: str) -> Any:
        if name == "schema":
            raise ImportError("no module named 'gone'")
        return real(name)

    monkeypatch.setattr(host.cli, "_command", broken)
    assert main(["schema"]) == 3
    assert "the 'schema' command failed to load: ImportError: no module named 'gone'" in (
        capsys.readouterr().err
    )
    assert main(["--help"]) == 0
    assert "schema    print the spec language's JSON Schema" in capsys.readouterr().out
    assert main(["validate", str(ROOT / "specs")]) == 0


def test_every_listed_command_has_configure_and_run() -> None:
    import importlib

    assert {"validate", "schema"} <= set(COMMANDS)
    for name in COMMANDS:
        module = importlib.import_module(f"host.commands.{name}")
        assert callable(module.configure) and callable(module.run)


LOADED = """
import sys
from host.cli import main
code = main(sys.argv[1:])
heavy = sorted({name.split(".")[0] for name in sys.modules} & {"gunicorn", "falcon"})
print("loaded:", ",".join(heavy), file=sys.stderr)
sys.exit(code)
"""


def test_a_command_loads_only_what_it_needs() -> None:
    # NOTE: every command used to be imported to build the parser: each `host validate` paid
    # for gunicorn and Falcon, 0.8 s a run against 0.3 s.
    done = subprocess.run(
        [sys.executable, "-c", LOADED, "validate", str(ROOT / "specs")],
        cwd=ROOT, capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert done.stderr.strip().splitlines()[-1] == "loaded:"
    listed = subprocess.run(
        [sys.executable, "-c", LOADED, "--help"], cwd=ROOT, capture_output=True, text=True
    )
    assert listed.returncode == 0
    assert listed.stderr.strip().splitlines()[-1] == "loaded:"  # the list loads no command
    listed_names = [
        line.split()[0]
        for line in listed.stdout.splitlines()
        if line.startswith("    ") and not line.startswith("     ")
    ]
    assert listed_names == COMMANDS  # every command, with its help line


def run_on_terminal(*args: str) -> tuple[int, str]:
    """Run ``host`` with its stdout on a real pseudo-terminal; the exit status and what it wrote."""
    import pty

    command = [str(SCRIPT)] if SCRIPT.exists() else [sys.executable, "-m", "host"]
    leader, follower = pty.openpty()
    try:
        done = subprocess.run(
            [*command, *args], cwd=ROOT, stdout=follower, stderr=subprocess.PIPE, timeout=60
        )
    finally:
        os.close(follower)
    chunks = []
    while True:
        try:
            chunk = os.read(leader, 65536)
        except OSError:
            break
        if not chunk:
            break
        chunks.append(chunk)
    os.close(leader)
    return done.returncode, b"".join(chunks).decode().replace("\r\n", "\n")


def test_a_terminal_gets_a_one_line_summary() -> None:
    code, shown = run_on_terminal("validate", "specs/")
    assert (code, shown) == (0, "ok: 6 tools in 5 files, no problems\n")
    code, shown = run_on_terminal("validate", "--quiet", "specs/")
    assert (code, shown) == (0, "")
    code, shown = run_on_terminal("validate", str(BROKEN / "order.yaml"))
    assert code == 1
    assert shown.endswith("\n2 errors in 1 file\n")


def test_pipes_stay_silent_when_clean() -> None:
    done = run_host("validate", "specs/")
    assert (done.returncode, done.stdout) == (0, "")
