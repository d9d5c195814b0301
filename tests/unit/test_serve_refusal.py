"""``host serve`` refusing to start leaves nothing behind: no data directory, secret or store."""

from __future__ import annotations

from pathlib import Path

import pytest

from host.serve.start import ServeOptions, serve
from support.paths import ROOT

EXAMPLE = ROOT / "examples" / "change-control"


@pytest.fixture
def bare(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    for name in ("HOST_SECRET", "HOST_DATA_DIR", "HOST_STORE", "HOST_AUTH_TOKENS",
                 "HOST_AUTH_ISSUER", "HOST_AUTH_AUDIENCE"):  # fmt: skip
        monkeypatch.delenv(name, raising=False)
    return tmp_path


def test_specs_with_an_approve_step_and_no_auth_refuse_before_any_file(
    bare: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    status = serve(ServeOptions(specs=EXAMPLE / "specs"))

    err = capsys.readouterr().err
    assert status == 1 and "host: not serving:" in err and "restart_service" in err
    assert "no HOST_SECRET set" not in err
    assert not (bare / ".host").exists()
